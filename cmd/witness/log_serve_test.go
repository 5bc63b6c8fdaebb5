package main

import (
	"bufio"
	"bytes"
	"errors"
	"github.com/agent-trace-witness/witness/internal/mysqltest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestLogServeWitness runs the real binary as a transparency log server
// (`log serve --storage posix:DIR`) and two witnesses (`log witness`), all
// on 127.0.0.1 at ports they pick, anchors a session over HTTP with
// `capture append --log URL` and `proxy --log URL`, and checks the
// verdicts of `verify --log URL`: both witnesses trusted with
// --log-quorum 2 is verified (0), one trusted is a violation (1), the file
// cut back to its first anchored end is tampered (3), and a --log-key
// pinned to another key is tampered (3).
func TestLogServeWitness(t *testing.T) {
	h := newServedLog(t)
	vk := h.logKey("example.test/cli")
	w1, w2 := h.startWitness("w1", vk), h.startWitness("w2", vk)
	h.ok("log", "init", "log", "--keyring", "logkeys.json", "--origin", "example.test/cli", "--witness", w1, "--witness", w2)
	url := h.start("serve", "log", "serve", "--storage", "posix:log", "--listen", "127.0.0.1:0")
	h.checkAnchoring(url, vk, true)
}

// TestLogServeWitnessMySQL is TestLogServeWitness with the log in MySQL
// or MariaDB (`log serve --storage mysql:DSN`). Without
// WITNESS_TEST_MYSQL_DSN it skips, except under CI=true, where it fails.
func TestLogServeWitnessMySQL(t *testing.T) {
	dsn := mysqltest.FreshDatabase(t, mysqltest.DSN(t), "witness_cli")
	h := newServedLog(t)
	vk := h.logKey("example.test/mysql")
	w1, w2 := h.startWitness("w1", vk), h.startWitness("w2", vk)
	url := h.start("serve", "log", "serve", "--storage", "mysql:"+dsn, "--keyring", "logkeys.json",
		"--origin", "example.test/mysql", "--witness", w1, "--witness", w2, "--listen", "127.0.0.1:0")
	if got := h.said("serve", "log key: "); got != vk {
		t.Fatalf("log serve with mysql says log key %q, 'log init' with the same keyring %q", got, vk)
	}
	h.checkAnchoring(url, vk, false)
}

// servedLog runs witness commands in one folder and keeps the daemons it
// started (stopped with SIGTERM when the test ends).
type servedLog struct {
	t       *testing.T
	bin     string
	dir     string
	env     []string
	mu      sync.Mutex
	stderrs map[string]*bytes.Buffer // daemon name -> its stderr so far
}

func newServedLog(t *testing.T) *servedLog {
	dir := t.TempDir()
	return &servedLog{
		t: t, bin: confWitness(t), dir: dir,
		env: confEnv("WITNESS_KEYRING="+filepath.Join(dir, "keys.json"), "HOME="+filepath.Join(dir, "home"),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "home", ".config"), "ATW_WITNESS_TS=2026-08-30T14:33:00+00:00"),
		stderrs: map[string]*bytes.Buffer{},
	}
}

// run runs the witness binary with stdin and returns its exit code and
// outputs.
func (h *servedLog) run(stdin string, args ...string) (int, string, string) {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir, cmd.Env = h.dir, h.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			h.t.Fatalf("witness %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// exits runs the binary and fails unless it exits with want; it returns
// stdout and stderr.
func (h *servedLog) exits(want int, stdin string, args ...string) (string, string) {
	h.t.Helper()
	code, stdout, stderr := h.run(stdin, args...)
	if code != want {
		h.t.Fatalf("witness %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

func (h *servedLog) ok(args ...string) string {
	h.t.Helper()
	stdout, _ := h.exits(0, "", args...)
	return stdout
}

// logKey returns the verifier key of a log of origin signed by
// logkeys.json (created on first use): 'log init' in a scratch folder
// prints it, and it depends only on the key and the origin, so the
// witnesses can be started, and their URLs known, before the real log is
// created or served.
func (h *servedLog) logKey(origin string) string {
	h.t.Helper()
	out := h.ok("log", "init", "probe-"+strings.ReplaceAll(origin, "/", "_"), "--keyring", "logkeys.json", "--origin", origin)
	for _, line := range strings.Split(out, "\n") {
		if k, ok := strings.CutPrefix(line, "log key: "); ok {
			return k
		}
	}
	h.t.Fatalf("log init printed no log key:\n%s", out)
	return ""
}

// startWitness starts `log witness` with a keyring of its own, named by
// its key id (the default), and returns its URL.
func (h *servedLog) startWitness(name, logKey string) string {
	h.t.Helper()
	return h.start(name, "log", "witness", "--keyring", name+".json", "--log-key", logKey,
		"--state", name+"-state", "--listen", "127.0.0.1:0")
}

// start starts a daemon and returns the URL of its "listening on" line on
// stderr. When the test ends it is stopped with SIGTERM and must exit 0
// (killed after 10 s).
func (h *servedLog) start(name string, args ...string) string {
	t := h.t
	t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir, cmd.Env = h.dir, h.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	h.mu.Lock()
	h.stderrs[name] = buf
	h.mu.Unlock()
	urls := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			buf.WriteString(line + "\n")
			h.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "listening on "); ok {
				urls <- u
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { <-done; exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s (witness %s) on SIGTERM: %v\n%s", name, strings.Join(args, " "), err, h.stderrOf(name))
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within 10 s of SIGTERM; killed", name)
		}
	})
	select {
	case u := <-urls:
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("%s listens on %s, want 127.0.0.1", name, u)
		}
		return u
	case <-done:
		t.Fatalf("%s exited before listening:\n%s", name, h.stderrOf(name))
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not say where it listens within 60 s:\n%s", name, h.stderrOf(name))
	}
	return ""
}

func (h *servedLog) stderrOf(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderrs[name].String()
}

// said returns the rest of the daemon's first stderr line starting with prefix.
func (h *servedLog) said(name, prefix string) string {
	for _, line := range strings.Split(h.stderrOf(name), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest
		}
	}
	return ""
}

// checkAnchoring anchors a session in the log served at url, twice, and
// checks the verdicts of verify against it; with proxy, also a session
// recorded by `proxy --log url`. vk is the log's key, pinned by the trust
// files and --log-key (issue 30: unpinned, the anchor is unauthenticated).
func (h *servedLog) checkAnchoring(url, vk string, proxy bool) {
	t := h.t
	t.Helper()
	root := testrepo.Root(t)
	h.ok("keygen")
	h.ok("import", "--from", "atw-0.1.0", filepath.Join(root, "testdata", "compat", "atw-0.1.0", "hansard_scenario_1.jsonl"), "--out", "events.jsonl", "-q")
	out, _ := h.exits(0, `{"kind":"model_input","content":"one more"}`+"\n", "capture", "append", "--events", "events.jsonl", "--log", url)
	if want := "witness: anchored the end after 9 lines at index 0 of log " + url + " -> events.jsonl.tlog/9.json"; !strings.Contains(out, want) {
		t.Fatalf("first anchor: want %q in\n%s", want, out)
	}
	// the file and its bundle as they were at the first anchored end
	for _, f := range []string{"events.jsonl", filepath.Join("events.jsonl.tlog", "9.json")} {
		data, err := os.ReadFile(filepath.Join(h.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(h.dir, "cut", f), string(data))
	}
	out, _ = h.exits(0, `{"kind":"model_input","content":"and another"}`+"\n", "capture", "append", "--events", "events.jsonl", "--log", url)
	if want := "at index 1 of log " + url + " -> events.jsonl.tlog/11.json"; !strings.Contains(out, want) {
		t.Fatalf("second anchor: want %q in\n%s", want, out)
	}

	// both witnesses cosigned the bundle's checkpoint, under their key ids
	bundle := readFile(t, filepath.Join(h.dir, "events.jsonl.tlog", "11.json"))
	for _, w := range []string{"w1", "w2"} {
		id := h.said(w, "witness ")
		id, _, _ = strings.Cut(id, " ")
		if id == "" || !strings.Contains(bundle, `\n— `+id+` `) {
			t.Errorf("the bundle's checkpoint has no cosignature of witness %s (%q):\n%s", w, id, bundle)
		}
	}

	// trust files: both witnesses, and w1 alone
	h.ok("key", "export-public", "--keyring", "w1.json", "--out", "trust.json", "--log-key", vk)
	h.ok("key", "export-public", "--keyring", "w2.json", "--out", "trust.json", "--merge")
	h.ok("key", "export-public", "--keyring", "w1.json", "--out", "trust1.json", "--log-key", vk)

	// the log's key not pinned: what the server names is not trusted
	out, _ = h.exits(6, "", "verify", "--events", "events.jsonl", "--log", url)
	mustHave(t, out, "error: anchor-log-unpinned: the log names its key "+vk+", but no log key is pinned", "verdict: unauthenticated (exit 6)")

	out, _ = h.exits(0, "", "verify", "--events", "events.jsonl", "--log", url, "--log-quorum", "2", "--trust", "trust.json")
	mustHave(t, out, "notice: anchor-latest: the log (size 2; entries read from index 1: 1) holds no later end of this session than index 1", "verdict: verified (exit 0)")

	out, _ = h.exits(1, "", "verify", "--events", "events.jsonl", "--log", url, "--log-quorum", "2", "--trust", "trust1.json")
	mustHave(t, out, "warning: anchor-quorum: 1 distinct trusted witness(es) cosigned the checkpoint, fewer than --log-quorum 2", "verdict: violation (exit 1)")

	// the cut-back file verifies offline, and is tampered with the log
	out, _ = h.exits(0, "", "verify", "--events", filepath.Join("cut", "events.jsonl"))
	mustHave(t, out, "verdict: verified (exit 0)")
	out, _ = h.exits(3, "", "verify", "--events", filepath.Join("cut", "events.jsonl"), "--log", url, "--log-key", vk)
	mustHave(t, out, "error: anchor-cut-back: the log holds a later end of this session at index 1 (after 11 lines", "verdict: tampered (exit 3)")

	// a pinned log key that is not the served log's
	other := h.ok("log", "init", "other", "--keyring", "otherkeys.json", "--origin", "example.test/other")
	otherKey := other[strings.Index(other, "log key: ")+len("log key: "):]
	otherKey = strings.TrimSpace(otherKey)
	out, _ = h.exits(3, "", "verify", "--events", "events.jsonl", "--log", url, "--log-key", otherKey)
	mustHave(t, out, "error: anchor-log-key: the log names its key "+vk+", not the pinned "+otherKey, "verdict: tampered (exit 3)")

	if !proxy {
		return
	}
	// witness proxy --log URL: the status line on stderr, stdout is the wire
	writeFile(t, filepath.Join(h.dir, "recorded.jsonl"), logServeCassette)
	stdout, stderr := h.exits(0, logServeHost, "proxy", "--out", "rec", "--keyring", filepath.Join(h.dir, "keys.json"), "--log", url,
		"--", h.bin, "serve", "--cassette", "recorded.jsonl")
	mustHave(t, stdout, `"text":"deleted draft"`)
	mustHave(t, stderr, "witness: anchored the end after ", " at index 2 of log "+url+" -> rec/events.jsonl.tlog/")
	out, _ = h.exits(0, "", "verify", "--events", filepath.Join("rec", "events.jsonl"), "--log", url, "--log-quorum", "2", "--trust", "trust.json")
	mustHave(t, out, "notice: anchor-latest: the log (size 3", "verdict: verified (exit 0)")
}

func mustHave(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("want %q in\n%s", w, out)
		}
	}
}

// logServeHost and logServeCassette are the host's messages and a
// recording of testdata/servers/echo answering them (as in
// log_proxy.txtar).
const logServeHost = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script-host","version":"1"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_note","arguments":{"name":"draft"}}}
`

const logServeCassette = `{"format":"witness-cassette","v":1,"command":"echo-server","args":[],"env":["PATH"],"started":"2026-08-30T14:33:00+00:00","frozen":true,"mode":"proxy"}
{"seq":0,"life":"spawn"}
{"seq":1,"dir":"c2s","off":0,"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"script-host\",\"version\":\"1\"}}}"}
{"seq":2,"dir":"s2c","off":0,"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{\"listChanged\":true}},\"serverInfo\":{\"name\":\"witness-echo\",\"version\":\"1.0.0\"}}}"}
{"seq":3,"dir":"c2s","off":157,"text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_note\",\"arguments\":{\"name\":\"draft\"}}}"}
{"seq":4,"dir":"s2c","off":168,"text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"deleted draft\"}]}}"}
`
