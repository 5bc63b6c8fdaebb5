package capture

import (
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/mcp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lvPeer returns node and the entry point of an npm peer server, failing
// when CI=true and the peers are missing, skipping otherwise.
func lvPeer(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	entry = filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(entry)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peer %s missing (%v): run 'make peers'", pkg, err)
		}
		t.Skipf("npm peer %s missing (%v): run 'make peers'", pkg, err)
	}
	return node, entry
}

func lvCountMethod(evs []*eventlog.Event, method string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == eventlog.KindNotification && e.Method == method {
			n++
		}
	}
	return n
}

func TestPeerServerEverything(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-everything")
	calls := []ScenarioCall{
		{Tool: "echo", Arguments: json.RawMessage(`{"message":"hi ✓"}`)},
		{Tool: "get-sum", Arguments: json.RawMessage(`{"a":1.5,"b":2}`)},
		{Tool: "get-structured-content", Arguments: json.RawMessage(`{"location":"New York"}`)},
		{Tool: "no_such_tool", Arguments: json.RawMessage(`{}`)},
		{Tool: "echo", Arguments: json.RawMessage(`{}`)},
	}
	runs := 10
	if testing.Short() {
		runs = 1
	}
	var first *lvCaptured
	for i := 0; i < runs; i++ {
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, "stdio"}, Timeout: 20 * time.Second}, Calls: calls})
		if c.err != nil {
			t.Fatalf("run %d: %v\nwarnings %v", i, c.err, c.warnings)
		}
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.events, c.events) {
			t.Fatalf("run %d: event log differs from run 0\n%s\n---\n%s", i, first.events, c.events)
		}
	}
	c := first
	t.Logf("server-everything: %d tools, %d calls, %d records, %d events, first run %s", c.res.Tools, c.res.Calls, c.res.Records, c.res.EventN, c.dur.Round(time.Millisecond))
	evs := lvReadEvents(t, c.events)
	h := evs[0].Header.Server
	if h.Name != "mcp-servers/everything" || h.ProtocolVersion != "2025-11-25" || len(h.Tools) != c.res.Tools || c.res.Tools < 10 {
		t.Fatalf("header %+v", h)
	}
	if lvCountMethod(evs, "notifications/tools/list_changed") < 1 {
		t.Fatalf("no unprompted notifications/tools/list_changed recorded:\n%s", c.events)
	}
	tc, tr := lvByKind(evs, eventlog.KindToolCall), lvByKind(evs, eventlog.KindToolResponse)
	if len(tc) != 5 || len(tr) != 5 {
		t.Fatalf("calls %d responses %d", len(tc), len(tr))
	}
	for i := range tc {
		if tr[i].Call != tc[i].ID {
			t.Fatalf("response %d links %s, want %s", i, tr[i].Call, tc[i].ID)
		}
	}
	if !bytes.Contains(tr[0].Payload, []byte("Echo: hi ✓")) || !*tr[3].IsError || !*tr[4].IsError || *tr[0].IsError {
		t.Fatalf("results: %s / %s", tr[0].Payload, tr[3].Payload)
	}
	if !bytes.Contains(tr[2].Payload, []byte("structuredContent")) {
		t.Fatalf("structured result not kept: %s", tr[2].Payload)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}

func TestPeerServerFilesystem(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(root), "outside.txt")
	args := func(v map[string]string) json.RawMessage { b, _ := json.Marshal(v); return b }
	calls := []ScenarioCall{
		{Tool: "list_directory", Arguments: args(map[string]string{"path": root})},
		{Tool: "read_text_file", Arguments: args(map[string]string{"path": filepath.Join(root, "a.txt")})},
		{Tool: "write_file", Arguments: args(map[string]string{"path": filepath.Join(root, "b.txt"), "content": "written by witness"})},
		{Tool: "read_text_file", Arguments: args(map[string]string{"path": outside})},
	}
	runs := 10
	if testing.Short() {
		runs = 1
	}
	var first *lvCaptured
	for i := 0; i < runs; i++ {
		os.Remove(filepath.Join(root, "b.txt"))
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, root}, Timeout: 20 * time.Second}, Calls: calls})
		if c.err != nil {
			t.Fatalf("run %d: %v\nwarnings %v", i, c.err, c.warnings)
		}
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.events, c.events) {
			t.Fatalf("run %d: event log differs from run 0\n%s\n---\n%s", i, first.events, c.events)
		}
	}
	c := first
	t.Logf("server-filesystem: %d tools, %d calls, %d records, %d events, first run %s", c.res.Tools, c.res.Calls, c.res.Records, c.res.EventN, c.dur.Round(time.Millisecond))
	evs := lvReadEvents(t, c.events)
	if evs[0].Header.Server.Name != "secure-filesystem-server" || c.res.Tools != 14 {
		t.Fatalf("header %+v, %d tools", evs[0].Header.Server, c.res.Tools)
	}
	tr := lvByKind(evs, eventlog.KindToolResponse)
	if len(tr) != 4 || !*tr[3].IsError || *tr[1].IsError || !bytes.Contains(tr[1].Payload, []byte(`hello\n`)) {
		t.Fatalf("responses: %+v", tr)
	}
	if !strings.Contains(string(tr[3].Payload), "Access denied") {
		t.Fatalf("error result: %s", tr[3].Payload)
	}
	eff := lvByKind(evs, eventlog.KindExternalEffect)
	tc := lvByKind(evs, eventlog.KindToolCall)
	if len(eff) != 1 || eff[0].Call != tc[2].ID || eff[0].Effect.Target != filepath.Join(root, "b.txt") {
		t.Fatalf("effects %+v", eff)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}

// TestPeerServerEverythingConversation: the whole MCP conversation with
// the real server-everything becomes events — resources, prompts,
// completions, logging, ping, and a tool call that makes the server ask
// the host for a sampling and two elicitations (form and URL mode), which
// the scenario answers — the same bytes in 10 runs, re-derived alike
// from the cassette.
func TestPeerServerEverythingConversation(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-everything")
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	calls := []ScenarioCall{
		{Answer: mcp.MethodSamplingCreateMessage, Result: raw(`{"role":"assistant","content":{"type":"text","text":"4"},"model":"scripted-model","stopReason":"endTurn"}`)},
		{Answer: mcp.MethodElicitationCreate, Result: raw(`{"action":"accept","content":{"name":"Ada"}}`)},
		{Answer: mcp.MethodElicitationCreate, Result: raw(`{"action":"decline"}`)},
		{Method: "resources/list"},
		{Method: "resources/templates/list"},
		{Method: "resources/read", Params: raw(`{"uri":"demo://resource/static/document/features.md"}`)},
		{Method: "resources/read", Params: raw(`{"uri":"demo://no/such/resource"}`)},
		{Method: "prompts/list"},
		{Method: "prompts/get", Params: raw(`{"name":"simple-prompt"}`)},
		{Method: "completion/complete", Params: raw(`{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"E"}}`)},
		{Method: "logging/setLevel", Params: raw(`{"level":"error"}`)},
		{Method: "ping"},
		{Tool: "trigger-sampling-request", Arguments: raw(`{"prompt":"2+2?","maxTokens":5}`)},
		{Tool: "trigger-elicitation-request"},
		{Tool: "trigger-url-elicitation", Arguments: raw(`{"url":"https://example.com/authorize","message":"Sign in","elicitationId":"el-1"}`)},
	}
	runs := 10
	if testing.Short() {
		runs = 1
	}
	var first *lvCaptured
	for i := 0; i < runs; i++ {
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, "stdio"}, Timeout: 20 * time.Second}, Calls: calls})
		if c.err != nil {
			t.Fatalf("run %d: %v\nwarnings %v", i, c.err, c.warnings)
		}
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.events, c.events) {
			t.Fatalf("run %d: event log differs from run 0\n%s\n---\n%s", i, first.events, c.events)
		}
	}
	c := first
	t.Logf("server-everything conversation: %d requests, %d calls, %d records, %d events", c.res.Requests, c.res.Calls, c.res.Records, c.res.EventN)
	evs := lvReadEvents(t, c.events)
	byID := map[string]*eventlog.Event{}
	req := map[string][]*eventlog.Event{}
	resp := map[string][]*eventlog.Event{}
	for _, e := range evs {
		byID[e.ID] = e
		switch e.Kind {
		case eventlog.KindMCPRequest, eventlog.KindModelInput:
			req[e.Method] = append(req[e.Method], e)
		case eventlog.KindMCPResponse, eventlog.KindModelOutput, eventlog.KindUserInput:
			resp[e.Method] = append(resp[e.Method], e)
			link := e.Call + e.Input
			if r := byID[link]; r == nil || r.Method != e.Method || string(r.RPCID) != string(e.RPCID) || r.Direction == e.Direction {
				t.Errorf("%s %s %s links %q", e.Kind, e.Method, e.RPCID, link)
			}
		}
	}
	for _, m := range []string{"initialize", "tools/list", "resources/list", "resources/templates/list", "resources/read", "prompts/list",
		"prompts/get", "completion/complete", "logging/setLevel", "ping", mcp.MethodSamplingCreateMessage, mcp.MethodElicitationCreate} {
		if len(req[m]) == 0 || len(req[m]) != len(resp[m]) {
			t.Errorf("%s: %d requests, %d answers", m, len(req[m]), len(resp[m]))
		}
	}
	if len(req["resources/read"]) != 2 || !bytes.Contains(resp["resources/read"][0].Payload, []byte(`"uri":"demo://resource/static/document/features.md"`)) || !resp["resources/read"][1].RPCError {
		t.Errorf("resources/read answers: %s / %s", resp["resources/read"][0].Payload, resp["resources/read"][1].Payload)
	}
	if !bytes.Contains(resp["completion/complete"][0].Payload, []byte(`"Engineering"`)) {
		t.Errorf("completion: %s", resp["completion/complete"][0].Payload)
	}
	// the server's requests happened during the tool calls that caused them
	calls2 := map[string]string{}
	for _, e := range lvByKind(evs, eventlog.KindToolCall) {
		calls2[e.Tool] = e.ID
	}
	sampling, elicit := req[mcp.MethodSamplingCreateMessage], req[mcp.MethodElicitationCreate]
	if len(sampling) != 1 || sampling[0].Kind != eventlog.KindModelInput || sampling[0].During != calls2["trigger-sampling-request"] || sampling[0].Direction != eventlog.DirS2C {
		t.Fatalf("sampling request %+v", sampling)
	}
	out := resp[mcp.MethodSamplingCreateMessage][0]
	if out.Kind != eventlog.KindModelOutput || out.Input != sampling[0].ID || !bytes.Contains(out.Payload, []byte(`"scripted-model"`)) {
		t.Fatalf("sampling answer %+v", out)
	}
	if len(elicit) != 2 || elicit[0].During != calls2["trigger-elicitation-request"] || elicit[1].During != calls2["trigger-url-elicitation"] ||
		!bytes.Contains(elicit[1].Payload, []byte(`"mode":"url"`)) {
		t.Fatalf("elicitation requests %+v", elicit)
	}
	if ui := resp[mcp.MethodElicitationCreate]; ui[0].Kind != eventlog.KindUserInput || !bytes.Contains(ui[0].Payload, []byte(`"Ada"`)) || !bytes.Contains(ui[1].Payload, []byte(`"decline"`)) {
		t.Fatalf("elicitation answers %s / %s", ui[0].Payload, ui[1].Payload)
	}
	// the tool results carry what the host answered
	for _, r := range lvByKind(evs, eventlog.KindToolResponse) {
		if byID[r.Call].Tool == "trigger-sampling-request" && !bytes.Contains(r.Payload, []byte("scripted-model")) {
			t.Errorf("sampling tool result: %s", r.Payload)
		}
	}
	if end := evs[len(evs)-1].End; !strings.HasPrefix(end.Reason, "completed") || end.Failure != "" {
		t.Fatalf("end %+v", end)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}

// TestPeerServerEverythingRoots: a host that declares roots is asked for
// them by server-everything (on a timer after initialization, and by the
// get-roots-list tool); the scripted answer is an mcp_response c2s linked
// to the server's roots/list request. One run: when the timer fires is
// not under the test's control, so the log's order is not either.
func TestPeerServerEverythingRoots(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-everything")
	calls := []ScenarioCall{
		{Answer: "roots/list", Result: json.RawMessage(`{"roots":[{"uri":"file:///work/project","name":"project"}]}`)},
		{Tool: "get-roots-list"},
	}
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, "stdio"}, Timeout: 20 * time.Second}, Calls: calls})
	if c.err != nil {
		t.Fatalf("%v\nwarnings %v", c.err, c.warnings)
	}
	evs := lvReadEvents(t, c.events)
	var reqs, answers int
	for _, e := range evs {
		if e.Method != "roots/list" {
			continue
		}
		switch {
		case e.Kind == eventlog.KindMCPRequest && e.Direction == eventlog.DirS2C:
			reqs++
		case e.Kind == eventlog.KindMCPResponse && e.Direction == eventlog.DirC2S && bytes.Contains(e.Payload, []byte("file:///work/project")):
			answers++
		}
	}
	tr := lvByKind(evs, eventlog.KindToolResponse)
	if reqs == 0 || reqs != answers || len(tr) != 1 || !bytes.Contains(tr[0].Payload, []byte("file:///work/project")) {
		t.Fatalf("%d roots/list requests, %d answers, tool responses %v:\n%s", reqs, answers, tr, c.events)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
}
