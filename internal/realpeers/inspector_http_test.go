package realpeers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/internal/daemontest"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// daemon is a long-running peer (internal/daemontest).
type daemon = daemontest.Daemon

// startDaemon starts argv and waits until it listens (daemontest.Start).
func startDaemon(t *testing.T, argv, env []string, port int) *daemon {
	return daemontest.Start(t, argv, env, port, runLimit)
}

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int { return daemontest.FreePort(t) }

// runWitness runs a witness verb to its end and returns its exit code and
// output.
func runWitness(t *testing.T, wit string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, wit, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("witness %v: %v\n%s", args, err, out)
	}
	return 0, string(out)
}

// TestInspectorHTTP drives server-everything in streamableHttp mode with
// the MCP Inspector's CLI over its HTTP transport (issue 14 item 7), one
// session per --method: directly, through the real `witness proxy --listen
// --upstream`, and from each session's cassette (mcp/N/cassette.jsonl)
// through `witness serve --listen`. The Inspector prints the same bytes and
// exits 0 all three ways; what it printed is the answer the session
// cassette holds; each session log has its events (checkEvents) and passes
// `witness verify --events` (integrity only, signed with the proxy's
// keyring: exit 0), as does the proxy's own log; serve exits 0 at SIGTERM
// with --require-all (every recorded request was asked for, no miss).
// Nothing is normalised: none of these answers carries server-everything's
// timestamps (the "created at" of its dynamic resources).
func TestInspectorHTTP(t *testing.T) {
	t.Parallel()
	p := needPeers(t)
	p.needInspector(t)
	wit := witness(t, p.root)
	home := t.TempDir()
	wenv := env(home)
	keys := filepath.Join(home, "keys.json")
	if code, out := runWitness(t, wit, wenv, "keygen", "--keyring", keys); code != 0 {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}

	port := freePort(t)
	up := startDaemon(t, []string{p.node, p.everything, "streamableHttp"}, env(home, fmt.Sprintf("PORT=%d", port)), port)
	rec := filepath.Join(t.TempDir(), "rec")
	proxy := startDaemon(t, []string{wit, "proxy", "--out", rec, "--keyring", keys, "--listen", "127.0.0.1:0", "--upstream", up.URL}, wenv, 0)

	methods := []struct {
		name   string
		method []string
	}{
		{"tools-list", []string{"--method", "tools/list"}},
		{"tools-call", []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=witnessed over HTTP"}},
		{"resources-read", []string{"--method", "resources/read", "--uri", "demo://resource/static/document/features.md"}},
		{"prompts-get", []string{"--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris"}},
	}
	direct := make([]*inspectorResult, len(methods))
	// One Inspector run is one MCP session; run one at a time, so that the
	// proxy's session N is the Nth run.
	for i, m := range methods {
		direct[i] = p.runInspector(t, []string{up.URL + "/mcp", "--transport", "http"}, m.method)
		via := p.runInspector(t, []string{proxy.URL + "/mcp", "--transport", "http"}, m.method)
		if direct[i].code != 0 || via.code != 0 {
			t.Errorf("%s: exit directly %d, through the proxy %d\n%s\n%s", m.name, direct[i].code, via.code, tail(direct[i].stderr), tail(via.stderr))
		}
		if len(direct[i].stdout) == 0 {
			t.Errorf("%s: the Inspector printed nothing directly\n%s", m.name, tail(direct[i].stderr))
		}
		if !bytes.Equal(direct[i].stdout, via.stdout) {
			t.Errorf("%s: the Inspector printed different bytes through the proxy %s", m.name, firstDiff(direct[i].stdout, via.stdout))
		}
	}
	if code := proxy.Stop(t); code != 0 {
		t.Fatalf("proxy: exit %d at SIGTERM\n%s", code, tail(proxy.Stderr.String()))
	}
	if code, out := runWitness(t, wit, wenv, "verify", "--events", filepath.Join(rec, "events.jsonl"), "--keyring", keys); code != 0 {
		t.Errorf("witness verify --events (the proxy's own log): exit %d\n%s", code, out)
	}
	if sessions, _ := filepath.Glob(filepath.Join(rec, "mcp", "*", "cassette.jsonl")); len(sessions) != len(methods) {
		t.Fatalf("%d session cassettes %v, want %d (one per Inspector run)", len(sessions), sessions, len(methods))
	}

	for i, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			dir := filepath.Join(rec, "mcp", strconv.Itoa(i+1))
			cas := filepath.Join(dir, "cassette.jsonl")
			_, _, lines := readCassette(t, cas)
			answer := answerTo(t, lines, m.method[1])
			got, err1 := canon.Transform(direct[i].stdout)
			want, err2 := canon.Transform(answer.Result)
			if answer.Error != nil || err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("the Inspector printed %.300s\nsession %d's answer is %.300s (%v %v)", direct[i].stdout, i+1, answer.Raw, err1, err2)
			}
			counts := checkEvents(t, lines, readEvents(t, filepath.Join(dir, "events.jsonl")))
			t.Logf("session %d: %d wire lines, events checked per kind: %v", i+1, len(lines), counts)
			if code, out := runWitness(t, wit, wenv, "verify", "--events", filepath.Join(dir, "events.jsonl"), "--keyring", keys); code != 0 {
				t.Errorf("witness verify --events mcp/%d/events.jsonl: exit %d\n%s", i+1, code, out)
			}

			serve := startDaemon(t, []string{wit, "serve", "--cassette", cas, "--listen", "127.0.0.1:0", "--require-all"}, wenv, 0)
			replayed := p.runInspector(t, []string{serve.URL + "/mcp", "--transport", "http"}, m.method)
			code := serve.Stop(t)
			if replayed.code != 0 || code != 0 {
				t.Errorf("exit: the Inspector %d, serve %d\n%s\n%s", replayed.code, code, tail(replayed.stderr), tail(serve.Stderr.String()))
			}
			if !bytes.Equal(direct[i].stdout, replayed.stdout) {
				t.Errorf("the Inspector printed different bytes from serve %s", firstDiff(direct[i].stdout, replayed.stdout))
			}
			t.Logf("%d bytes the same direct, through the proxy and replayed", len(direct[i].stdout))
		})
	}
}
