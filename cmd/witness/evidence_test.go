package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// envStub makes the test binary a minimal MCP stdio server (see init), so
// that capture and proxy can run a real session without node or a build.
const envStub = "WITNESS_EVIDENCE_TEST_STUB"

func init() {
	if os.Getenv(envStub) == "1" {
		stubServer(os.Stdin, os.Stdout)
		os.Exit(0)
	}
}

// stubServer answers initialize and tools/list (no tools) and every other
// request with an empty result, until its input ends.
func stubServer(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		result := `{}`
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"stub","version":"1"}}`, req.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"read_file","inputSchema":{"type":"object"}}]}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
}

// evidenceCmd is one command with an output flag, as the evidence table
// test runs it. In args, IN stands for the input that cases (a) to (c)
// alias, OUT for the output flag's value; both become absolute paths.
type evidenceCmd struct {
	name string
	args []string
	in   string // the input aliased by (a)-(c), relative to the case folder
	out  string // the protected output file, relative
	// outIsDir: the flag names the folder of out (capture, proxy)
	outIsDir bool
	// stdin is the file standard input reads ("" for none)
	stdin string
	// appends: the output is extended on purpose (capture append); the
	// aliases of (a)-(c) are on standard input, there is no --force and no
	// case (d)
	appends bool
}

// evidenceCommands lists every command that has an output flag. Keep it in
// step with the command tree: TestEvidenceOutputsCoverEveryCommand fails
// when a command gains an output flag that is not here.
func evidenceCommands(stub string) []evidenceCmd {
	return []evidenceCmd{
		{name: "seal --out", args: []string{"seal", "--spec", "IN", "--out", "OUT", "--keyring", "keys.json"}, in: "agent.json", out: "new.json"},
		{name: "seal --envelope-out", args: []string{"seal", "--spec", "IN", "--out", "seal-new.json", "--envelope", "dsse", "--envelope-out", "OUT", "--keyring", "bob.json"}, in: "agent.json", out: "env.jsonl"},
		{name: "seal init --out", args: []string{"seal", "init", "--system-prompt", "IN", "--out", "OUT", "--env", envStub + "=1", "--", stub}, in: "agent.json", out: "spec-new.json"},
		{name: "cosign --out", args: []string{"cosign", "IN", "--keyring", "bob.json", "--out", "OUT"}, in: "seal.json", out: "cosigned.json"},
		{name: "key export-public --out", args: []string{"key", "export-public", "--keyring", "IN", "--out", "OUT"}, in: "bob.json", out: "trust.json"},
		{name: "capture --out", args: []string{"capture", "--out", "OUT", "--redact", "$.password", "--redact-key", "IN", "--env", envStub + "=1", "--", stub}, in: "key.hex", out: "rec/events.jsonl", outIsDir: true},
		{name: "proxy --out", args: []string{"proxy", "--out", "OUT", "--redact", "$.password", "--redact-key", "IN", "--", stub}, in: "key.hex", out: "rec/events.jsonl", outIsDir: true},
		{name: "capture append --events", args: []string{"capture", "append", "--events", "OUT", "--keyring", "keys.json"}, in: "events.jsonl", out: "events.jsonl", stdin: "reported.jsonl", appends: true},
		{name: "import --out", args: []string{"import", "--from", "atw-0.1.0", "IN", "--out", "OUT", "-q"}, in: "legacy.jsonl", out: "imported.jsonl"},
		{name: "graph --out", args: []string{"graph", "--events", "IN", "--out", "OUT"}, in: "events.jsonl", out: "graph-new.jsonld"},
		{name: "report --out", args: []string{"report", "--events", "IN", "--out", "OUT"}, in: "events.jsonl", out: "report.html"},
		{name: "replay --out", args: []string{"replay", "--graph", "IN", "--rank", "--out", "OUT"}, in: "graph.jsonld", out: "rank.json"},
		{name: "verify --out", args: []string{"verify", "--seal", "seal.json", "--events", "IN", "--sarif", "--out", "OUT", "--keyring", "keys.json"}, in: "events.jsonl", out: "report.sarif"},
		{name: "firewall evaluate --out", args: []string{"firewall", "evaluate", "--policy", "policy-code.json", "--events", "IN", "--out", "OUT"}, in: "messages.events.jsonl", out: "audit.ndjson"},
		{name: "firewall derive --out", args: []string{"firewall", "derive", "--events", "IN", "--mapping", "mapping.json", "--out", "OUT"}, in: "toolcalls.events.jsonl", out: "derived.jsonl"},
	}
}

// notEvidenceOutputs are output-looking flags that do not write evidence,
// with the reason.
var notEvidenceOutputs = map[string]string{
	"key generate --out": "hidden 0.1.0 spelling of --keyring: the keyring replaces itself atomically under its lock",
	"key rotate --out":   "hidden 0.1.0 spelling of --keyring",
	"key revoke --out":   "hidden 0.1.0 spelling of --keyring",
	"key list --out":     "hidden 0.1.0 spelling of --keyring (read only)",
	// the hidden old names of the key verbs are the same commands
	"keygen --out":     "hidden 0.1.0 spelling of --keyring: the keyring replaces itself atomically under its lock",
	"rotate-key --out": "hidden 0.1.0 spelling of --keyring",
	"revoke-key --out": "hidden 0.1.0 spelling of --keyring",
	"list-keys --out":  "hidden 0.1.0 spelling of --keyring (read only)",
	"graph --tmp":      "a folder for sorted runs, removed after use",
	"why --tmp":        "a folder for the temporary graph and sorted runs of a long log, removed after use",
}

// TestEvidenceOutputs runs every command with an output flag against the
// five ways evidence could be overwritten:
//
//	(a) the output is an input by path, (b) a symlink to an input, (c) a
//	hard link to an input: refused (exit 2) even with --force, the input
//	unchanged;
//	(d) the output exists: refused without --force, replaced with it;
//	(e) the output is a symlink to another file: refused even with
//	--force, the target unchanged.
func TestEvidenceOutputs(t *testing.T) {
	stub, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envStub, "1") // for the proxy, whose server inherits the environment
	base := evidenceFixtures(t, stub)
	for _, c := range evidenceCommands(stub) {
		t.Run(c.name, func(t *testing.T) {
			for _, alias := range []string{"path", "symlink", "hardlink"} {
				t.Run("output is an input by "+alias, func(t *testing.T) {
					dir := copyFixtures(t, base)
					in, out := c.in, c.out
					var stdin string
					switch {
					case c.appends:
						// the log is the output; standard input is the alias
						stdin = aliasOf(t, dir, c.out, alias)
					case alias == "path" && c.outIsDir:
						// the recording's file is itself the input
						in = c.out
						copyFile(t, filepath.Join(dir, c.in), filepath.Join(dir, in))
					case alias == "path":
						out = in
					default:
						makeAlias(t, dir, in, out, alias)
					}
					before := readAll(t, dir, in, out)
					code, stderr := runEvidence(t, dir, c, in, out, stdin, !c.appends)
					if code != 2 || !strings.Contains(stderr, "refusing to write over an input") {
						t.Fatalf("exit %d, want 2 with a refusal; stderr:\n%s", code, stderr)
					}
					if !strings.Contains(stderr, "even with --force") {
						t.Errorf("hint does not say --force cannot help:\n%s", stderr)
					}
					if after := readAll(t, dir, in, out); after != before {
						t.Errorf("files changed by a refused command:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
			if !c.appends {
				t.Run("existing output", func(t *testing.T) {
					dir := copyFixtures(t, base)
					writeFile(t, filepath.Join(dir, c.out), "old evidence\n")
					code, stderr := runEvidence(t, dir, c, c.in, c.out, "", false)
					if code != 2 || !strings.Contains(stderr, "exists") || !strings.Contains(stderr, "--force to replace it") {
						t.Fatalf("without --force: exit %d, want 2 and a hint naming --force; stderr:\n%s", code, stderr)
					}
					if got := readFile(t, filepath.Join(dir, c.out)); got != "old evidence\n" {
						t.Fatalf("refused command changed the output: %q", got)
					}
					code, stderr = runEvidence(t, dir, c, c.in, c.out, "", true)
					if code == 2 || code == 5 {
						t.Fatalf("with --force: exit %d; stderr:\n%s", code, stderr)
					}
					fi, err := os.Lstat(filepath.Join(dir, c.out))
					if err != nil || !fi.Mode().IsRegular() {
						t.Fatalf("output after --force: %v %v", fi, err)
					}
					if got := readFile(t, filepath.Join(dir, c.out)); got == "old evidence\n" || got == "" {
						t.Errorf("with --force the output was not replaced: %q", got)
					}
				})
			}
			t.Run("output is a symlink elsewhere", func(t *testing.T) {
				dir := copyFixtures(t, base)
				// the target is a copy of the output's usual content (for
				// append, a valid log), so only the symlink rule refuses it
				target := filepath.Join(dir, "elsewhere.txt")
				if c.appends {
					copyFile(t, filepath.Join(dir, c.out), target)
				} else {
					writeFile(t, target, "someone else's file\n")
				}
				want := readFile(t, target)
				os.Remove(filepath.Join(dir, c.out))
				mkdirFor(t, filepath.Join(dir, c.out))
				if err := os.Symlink(target, filepath.Join(dir, c.out)); err != nil {
					t.Fatal(err)
				}
				code, stderr := runEvidence(t, dir, c, c.in, c.out, "", !c.appends)
				if code != 2 || !strings.Contains(stderr, "is a symlink") {
					t.Fatalf("exit %d, want 2 refusing the symlink; stderr:\n%s", code, stderr)
				}
				if got := readFile(t, target); got != want {
					t.Errorf("symlink target changed: %q", got)
				}
				if fi, err := os.Lstat(filepath.Join(dir, c.out)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced: %v %v", fi, err)
				}
			})
		})
	}
}

// TestEvidenceOutputsCoverEveryCommand fails when a command has an
// output-like flag that neither the evidence table nor notEvidenceOutputs
// lists.
func TestEvidenceOutputsCoverEveryCommand(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range evidenceCommands("stub") {
		covered[c.name] = true
	}
	for k := range notEvidenceOutputs {
		covered[k] = true
	}
	var missing []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "witness ")
		names := []string{"out", "output", "dir", "tmp", "envelope-out", "report-out", "audit-out", "graph-out", "events-out", "cassette-out"}
		if path == "capture append" {
			names = append(names, "events")
		}
		for _, n := range names {
			if c.Flags().Lookup(n) != nil && !covered[path+" --"+n] {
				missing = append(missing, path+" --"+n)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(newApp(nil, io.Discard, io.Discard, func(string) string { return "" })))
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("output flags missing from the evidence table (evidenceCommands) or notEvidenceOutputs: %v", missing)
	}
}

// runEvidence runs c in dir with IN and OUT filled in (for a folder
// output, OUT is out's folder); stdin defaults to c.stdin; force adds
// --force (before "--" for the verbs that run a server).
func runEvidence(t *testing.T, dir string, c evidenceCmd, in, out, stdin string, force bool) (int, string) {
	t.Helper()
	out = filepath.Join(dir, out)
	if c.outIsDir {
		out = filepath.Dir(out)
	}
	var args []string
	for _, a := range c.args {
		switch {
		case a == "IN":
			args = append(args, filepath.Join(dir, in))
		case a == "OUT":
			args = append(args, out)
		case strings.HasSuffix(a, ".json") || strings.HasSuffix(a, ".jsonl"):
			args = append(args, filepath.Join(dir, a))
		default:
			args = append(args, a)
		}
	}
	if force {
		i := len(args)
		for j, a := range args {
			if a == "--" {
				i = j
				break
			}
		}
		args = append(args[:i], append([]string{"--force"}, args[i:]...)...)
	}
	if stdin == "" {
		stdin = c.stdin
	}
	var r io.Reader = strings.NewReader("")
	if stdin != "" {
		if !filepath.IsAbs(stdin) {
			stdin = filepath.Join(dir, stdin)
		}
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	var stdout, stderr bytes.Buffer
	env := evidenceEnv(dir)
	code := run(args, newApp(r, &stdout, &stderr, func(k string) string { return env[k] }))
	return code, stderr.String()
}

func evidenceEnv(dir string) map[string]string {
	return map[string]string{
		"ATW_WITNESS_TS":  "2026-08-30T14:33:00+00:00",
		"WITNESS_KEYRING": filepath.Join(dir, "keys.json"),
		"HOME":            dir,
		"PATH":            os.Getenv("PATH"),
		envStub:           "1",
	}
}

// evidenceFixtures builds, once, the inputs every command reads: keyrings,
// a spec and its seal, an event log recorded by the proxy, its graph, and
// copies of the repository's 0.1.0 and firewall samples.
func evidenceFixtures(t *testing.T, stub string) string {
	t.Helper()
	root := testrepo.Root(t)
	dir := t.TempDir()
	env := evidenceEnv(dir)
	must := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(args, newApp(strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })); code != 0 {
			t.Fatalf("fixture %v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	writeFile(t, p("agent.json"), `{"system_prompt": "p", "tools": [{"name": "read_file", "scopes": ["read:/data/**"]}], "witness_id": "w-evidence"}`+"\n")
	writeFile(t, p("key.hex"), strings.Repeat("ab", 32)+"\n")
	writeFile(t, p("reported.jsonl"), `{"kind":"model_input","content":"hi"}`+"\n")
	must("key", "generate", "--keyring", p("keys.json"))
	must("key", "generate", "--keyring", p("bob.json"))
	must("seal", "--spec", p("agent.json"), "--out", p("seal.json"), "--keyring", p("keys.json"))
	must("proxy", "--out", p("rec0"), "--seal", p("seal.json"), "--", stub)
	copyFile(t, p("rec0/events.jsonl"), p("events.jsonl"))
	must("graph", "--events", p("events.jsonl"), "--out", p("graph.jsonld"))
	copyFile(t, filepath.Join(root, "testdata/compat/atw-0.1.0/hansard_scenario_1.jsonl"), p("legacy.jsonl"))
	for _, f := range []string{"policy-code.json", "messages.events.jsonl", "toolcalls.events.jsonl", "mapping.json"} {
		copyFile(t, filepath.Join(root, "testdata/firewall", f), p(f))
	}
	return dir
}

// copyFixtures copies the fixture folder's files (not folders) into a new
// folder for one case.
func copyFixtures(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			copyFile(t, filepath.Join(base, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	return dir
}

// makeAlias makes out (relative to dir) a symlink to, or a hard link of,
// the input in.
func makeAlias(t *testing.T, dir, in, out, alias string) {
	t.Helper()
	src, dst := filepath.Join(dir, in), filepath.Join(dir, out)
	mkdirFor(t, dst)
	var err error
	if alias == "symlink" {
		err = os.Symlink(src, dst)
	} else {
		err = os.Link(src, dst)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// aliasOf returns a name for dir/out of the given kind: the path itself, a
// symlink to it or a hard link of it.
func aliasOf(t *testing.T, dir, out, alias string) string {
	t.Helper()
	p := filepath.Join(dir, out)
	switch alias {
	case "symlink":
		l := filepath.Join(dir, "alias-symlink")
		if err := os.Symlink(p, l); err != nil {
			t.Fatal(err)
		}
		return l
	case "hardlink":
		l := filepath.Join(dir, "alias-hardlink")
		if err := os.Link(p, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	return p
}

func readAll(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		fmt.Fprintf(&b, "%s=%q(%v) ", n, data, err)
	}
	return b.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	mkdirFor(t, p)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mkdirFor(t, dst)
	if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func mkdirFor(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
}
