package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/mcp"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const lvFrozenTS = "2026-08-30T14:33:00+00:00"

func lvFrozenEnv(k string) string {
	if k == eventlog.EnvTS {
		return lvFrozenTS
	}
	return ""
}

var (
	lvBuildMu   sync.Mutex
	lvBuildDir  string
	lvBuildDone = map[string]string{}
)

// lvBuildTestServer builds the Go program at rel (relative to the repo root)
// once per test binary and returns the executable's path.
func lvBuildTestServer(t testing.TB, rel string) string {
	t.Helper()
	lvBuildMu.Lock()
	defer lvBuildMu.Unlock()
	if p, ok := lvBuildDone[rel]; ok {
		return p
	}
	if lvBuildDir == "" {
		d, err := os.MkdirTemp("", "witness-capture-test-bin-")
		if err != nil {
			t.Fatal(err)
		}
		lvBuildDir = d
	}
	out := filepath.Join(lvBuildDir, strings.ReplaceAll(rel, "/", "_"))
	cmd := exec.Command("go", "build", "-o", out, "./"+rel)
	cmd.Dir = testrepo.Root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", rel, err, b)
	}
	lvBuildDone[rel] = out
	return out
}

func lvServerEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
}

type lvCaptured struct {
	res      *CaptureResult
	err      error
	cassette []byte
	events   []byte
	warnings []string
	dur      time.Duration
}

func lvRunCapture(t testing.TB, o CaptureOptions) *lvCaptured {
	t.Helper()
	if o.OutDir == "" {
		o.OutDir = t.TempDir()
	}
	if o.Env == nil {
		o.Env = lvServerEnv()
	}
	if o.Getenv == nil {
		o.Getenv = lvFrozenEnv
	}
	var mu sync.Mutex
	c := &lvCaptured{}
	o.Warn = func(s string) { mu.Lock(); c.warnings = append(c.warnings, s); mu.Unlock() }
	start := time.Now()
	c.res, c.err = RunCapture(o)
	c.dur = time.Since(start)
	var err error
	if c.cassette, err = os.ReadFile(filepath.Join(o.OutDir, derive.CassetteFile)); err != nil {
		t.Fatal(err)
	}
	if c.events, err = os.ReadFile(filepath.Join(o.OutDir, derive.EventsFile)); err != nil {
		t.Fatal(err)
	}
	return c
}

func lvReadEvents(t testing.TB, data []byte) []*eventlog.Event {
	t.Helper()
	r := eventlog.NewReader(bytes.NewReader(data), "events.jsonl")
	var out []*eventlog.Event
	for {
		e, err := r.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("read events: %v\n%s", err, data)
		}
		out = append(out, e)
	}
}

func lvReadCassette(t testing.TB, data []byte) (cassette.Header, []*cassette.Record) {
	t.Helper()
	cr, err := cassette.NewReader(bytes.NewReader(data), "cassette.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var recs []*cassette.Record
	for {
		r, err := cr.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return cr.Header(), recs
			}
			t.Fatalf("read cassette: %v", err)
		}
		recs = append(recs, r)
	}
}

// lvCheckRederive re-derives the events from the cassette and compares bytes.
func lvCheckRederive(t testing.TB, c *lvCaptured) {
	t.Helper()
	var out bytes.Buffer
	if err := derive.EventsFromCassette(bytes.NewReader(c.cassette), "cassette.jsonl", &out, derive.Options{Cassette: derive.CassetteFile}); err != nil {
		t.Fatalf("EventsFromCassette: %v", err)
	}
	if !bytes.Equal(out.Bytes(), c.events) {
		t.Fatalf("events re-derived from the cassette differ from the live log:\nlive:\n%s\nderived:\n%s", c.events, out.Bytes())
	}
}

func lvCheckChain(t testing.TB, events []byte) {
	t.Helper()
	rep, err := eventlog.VerifyLog(bytes.NewReader(events), "events.jsonl", eventlog.VerifyLogOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatalf("verify log: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("log does not verify: %v", err)
	}
}

// lvCheckFailedChain checks the log of a capture that failed: its chain is
// intact, its end records the failure (containing want), and so the log is
// incomplete, never ok.
func lvCheckFailedChain(t testing.TB, events []byte, want string) {
	t.Helper()
	rep, err := eventlog.VerifyLog(bytes.NewReader(events), "events.jsonl", eventlog.VerifyLogOptions{AllowUnsigned: true})
	if rep.Status != eventlog.StatusIncomplete || exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("failed capture: status %s (%v), want incomplete; findings %v", rep.Status, err, rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Code != eventlog.FindFailure && f.Severity != eventlog.SevWarning {
			t.Fatalf("failed capture: finding %v besides the failure", f)
		}
	}
	found := false
	for _, f := range rep.Findings {
		found = found || (f.Code == eventlog.FindFailure && strings.Contains(f.Message, want))
	}
	if !found {
		t.Fatalf("failed capture: findings %v, want the failure %q", rep.Findings, want)
	}
}

func lvCheckGroupGone(t testing.TB, c *lvCaptured) {
	t.Helper()
	_, recs := lvReadCassette(t, c.cassette)
	sawExit := false
	for _, r := range recs {
		if r.Life == cassette.LifeExit {
			sawExit = true
		}
	}
	if !sawExit {
		t.Fatal("no exit record: the child was not reaped")
	}
}

func lvByKind(evs []*eventlog.Event, k eventlog.Kind) []*eventlog.Event {
	var out []*eventlog.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func TestGoSDKServer(t *testing.T) {
	t.Parallel()
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	calls := []ScenarioCall{
		{Tool: "greet", Arguments: json.RawMessage(`{"name":"witness"}`)},
		{Tool: "add", Arguments: json.RawMessage(`{"a":1.0,"b":2}`)},
		{Tool: "fail", Arguments: json.RawMessage(`{"why":"test"}`)},
		{Tool: "delete_file", Arguments: json.RawMessage(`{"path":"/tmp/x"}`)},
		{Tool: "add_tool"},
		{Tool: "no_such_tool", Arguments: json.RawMessage(`{}`)},
	}
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Timeout: 10 * time.Second}, Calls: calls})
	if c.err != nil {
		t.Fatalf("capture: %v\nwarnings: %v", c.err, c.warnings)
	}
	if c.res.Tools != 6 || c.res.Calls != 6 {
		t.Fatalf("tools %d calls %d", c.res.Tools, c.res.Calls)
	}
	if n := bytes.Count(c.cassette, []byte(`\"method\":\"tools/list\"`)); n != 3 {
		t.Fatalf("want 3 pages of tools/list (page size 2), got %d requests", n)
	}
	evs := lvReadEvents(t, c.events)
	h := evs[0].Header
	if h.Server.Name != "witness-gosdk-fixture" || h.Server.ProtocolVersion != "2025-11-25" || len(h.Server.Tools) != 6 {
		t.Fatalf("header server %+v", h.Server)
	}
	tc, tr := lvByKind(evs, eventlog.KindToolCall), lvByKind(evs, eventlog.KindToolResponse)
	if len(tc) != 6 || len(tr) != 6 {
		t.Fatalf("calls %d responses %d", len(tc), len(tr))
	}
	for i := range tc {
		if tr[i].Call != tc[i].ID || string(tr[i].RPCID) != string(tc[i].RPCID) {
			t.Fatalf("response %d not linked to its call: %+v", i, tr[i])
		}
	}
	if string(tc[1].Payload) != `{"a":1,"b":2}` && string(tc[1].Payload) != `{"a":1.0,"b":2}` {
		t.Fatalf("payload %s", tc[1].Payload)
	}
	if !*tr[2].IsError || *tr[0].IsError {
		t.Fatal("is_error of fail / greet")
	}
	if !bytes.Contains(tr[0].Payload, []byte(`Hi witness`)) {
		t.Fatalf("real result not kept: %s", tr[0].Payload)
	}
	eff := lvByKind(evs, eventlog.KindExternalEffect)
	if len(eff) != 1 || eff[0].Call != tc[3].ID || eff[0].Effect.Target != "/tmp/x" {
		t.Fatalf("external effects: %+v", eff)
	}
	var listChanged int
	for _, e := range lvByKind(evs, eventlog.KindNotification) {
		if e.Method == "notifications/tools/list_changed" {
			listChanged++
		}
	}
	if listChanged != 1 {
		t.Fatalf("want one unprompted notifications/tools/list_changed, got %d", listChanged)
	}
	last := evs[len(evs)-1]
	if last.Kind != eventlog.KindSessionEnd || last.End.Count != int64(len(evs)-1) {
		t.Fatalf("session end %+v", last)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}

func TestGoSDKDeterministic10Runs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10 server runs")
	}
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	calls := []ScenarioCall{
		{Tool: "greet", Arguments: json.RawMessage(`{"name":"a"}`)},
		{Tool: "fail", Arguments: json.RawMessage(`{}`)},
		{Tool: "delete_file", Arguments: json.RawMessage(`{"path":"p"}`)},
		{Tool: "add_tool"},
	}
	var first []byte
	for i := 0; i < 10; i++ {
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Args: []string{}}, Calls: calls})
		if c.err != nil {
			t.Fatal(c.err)
		}
		if i == 0 {
			first = c.events
			continue
		}
		if !bytes.Equal(first, c.events) {
			t.Fatalf("run %d: event log differs\n%s\n---\n%s", i, first, c.events)
		}
	}
}

func TestProtocolVersions(t *testing.T) {
	t.Parallel()
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Protocol: v}})
		if c.err != nil {
			t.Fatalf("%s: %v", v, c.err)
		}
		if c.res.Server.ProtocolVersion != v {
			t.Fatalf("%s: negotiated %s", v, c.res.Server.ProtocolVersion)
		}
	}
	_, err := openLive(LiveOptions{Command: bin, Protocol: "2026-07-28", Cassette: &bytes.Buffer{}, Events: &bytes.Buffer{}})
	if err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unsupported pinned version: %v", err)
	}
}

func TestServerRequestsAndPing(t *testing.T) {
	bin := lvBuildTestServer(t, "testdata/hostile/requests")
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Timeout: 5 * time.Second}, Calls: []ScenarioCall{{Tool: "echo"}}})
	if c.err != nil {
		t.Fatal(c.err)
	}
	for _, want := range []string{
		`"text":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}"`,
		`"text":"{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"error\":{\"code\":-32601,\"message\":\"method not found: sampling/createMessage\"}}"`,
		`"text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,`,
	} {
		if !bytes.Contains(c.cassette, []byte(want)) {
			t.Fatalf("cassette lacks %s\n%s", want, c.cassette)
		}
	}
	// the server's requests are events, made during the open tools/list
	// (id 2), and the host's answers pair with them by id and direction:
	// the host's answer to the server's roots/list id 2 is not the
	// server's answer to the host's tools/list id 2
	evs := lvReadEvents(t, c.events)
	var list *eventlog.Event
	for _, e := range lvByKind(evs, eventlog.KindMCPRequest) {
		if e.Method == "tools/list" {
			list = e
		}
	}
	if list == nil || string(list.RPCID) != "2" || list.Direction != eventlog.DirC2S {
		t.Fatalf("no tools/list request id 2:\n%s", c.events)
	}
	byMethod := map[string]*eventlog.Event{}
	for _, e := range evs {
		if e.Direction == eventlog.DirS2C && (e.Kind == eventlog.KindMCPRequest || e.Kind == eventlog.KindModelInput) {
			byMethod[e.Method] = e
			if e.During != list.ID || len(e.DuringCandidates) > 0 {
				t.Errorf("%s: during %q %v, want %s", e.Method, e.During, e.DuringCandidates, list.ID)
			}
		}
	}
	if len(byMethod) != 3 || byMethod["ping"] == nil || byMethod["roots/list"] == nil || byMethod[mcp.MethodSamplingCreateMessage].Kind != eventlog.KindModelInput {
		t.Fatalf("server requests %v:\n%s", byMethod, c.events)
	}
	answers := map[string]string{}
	for _, e := range evs {
		if e.Direction == eventlog.DirC2S && (e.Kind == eventlog.KindMCPResponse || e.Kind == eventlog.KindModelOutput) {
			answers[e.Method] = e.Call + e.Input
			if e.Method != "ping" && (!e.RPCError || !bytes.Contains(e.Payload, []byte("method not found"))) {
				t.Errorf("%s answer: %s", e.Method, e.Payload)
			}
		}
	}
	for m, req := range byMethod {
		if answers[m] != req.ID {
			t.Errorf("the answer to %s links %q, want %s", m, answers[m], req.ID)
		}
	}
	var listResp *eventlog.Event
	for _, e := range lvByKind(evs, eventlog.KindMCPResponse) {
		if e.Method == "tools/list" {
			listResp = e
		}
	}
	if listResp == nil || listResp.Call != list.ID || listResp.Direction != eventlog.DirS2C {
		t.Fatalf("tools/list answer %+v", listResp)
	}
	lvCheckRederive(t, c)
}

type lvHostileCase struct {
	name    string
	timeout time.Duration
	calls   []ScenarioCall
	errHas  []string
	check   func(t *testing.T, c *lvCaptured)
	// recorded: the capture failed, but after the whole session was
	// recorded (a server that would not exit), so its log is complete
	recorded bool
	// grace: the stdin and term grace periods (200 ms when zero); the
	// big line needs time to be read whole on a loaded machine before
	// the server is stopped
	grace time.Duration
}

func TestHostileServers(t *testing.T) {
	t.Parallel()
	cases := []lvHostileCase{
		{name: "silent", timeout: 300 * time.Millisecond, errHas: []string{"did not answer initialize", "within 300ms"}},
		{name: "wrongid", timeout: 2 * time.Second, errHas: []string{"did not answer initialize", `"1" (string)`}, check: func(t *testing.T, c *lvCaptured) {
			if len(lvByKind(lvReadEvents(t, c.events), eventlog.KindNotification)) != 1 {
				t.Fatal("the unmatched response must be an event")
			}
		}},
		{name: "banner", timeout: 10 * time.Second, calls: []ScenarioCall{{Tool: "echo"}}, check: func(t *testing.T, c *lvCaptured) {
			if !bytes.Contains(c.cassette, []byte(`"text":"Banner Server v1.0 starting on stdio..."`)) || !bytes.Contains(c.cassette, []byte(`"b64":"//4gbm90IHV0Zi04DQ=="`)) {
				t.Fatalf("banner lines not kept exactly:\n%s", c.cassette)
			}
			n := 0
			for _, e := range lvByKind(lvReadEvents(t, c.events), eventlog.KindNotification) {
				if e.Method == derive.MethodInvalidLine {
					n++
				}
			}
			if n != 2 || len(c.warnings) < 2 {
				t.Fatalf("invalid lines: %d events, warnings %v", n, c.warnings)
			}
		}},
		{name: "bigline", timeout: 60 * time.Second, grace: 20 * time.Second, errHas: []string{"maximum line size of 16 MiB"}, check: func(t *testing.T, c *lvCaptured) {
			_, recs := lvReadCassette(t, c.cassette)
			var line []byte
			for _, r := range recs {
				if r.Dir == cassette.S2C && (r.Cont || len(line) > 0) {
					line = append(line, r.Data...)
					if !r.Cont {
						break
					}
				}
			}
			if len(line) < 20<<20 {
				t.Fatalf("the 20 MiB line is not kept whole in the cassette: %d bytes", len(line))
			}
		}},
		{name: "midreply", timeout: 10 * time.Second, errHas: []string{"closed its stdout before answering tools/list", "exit status 3"}, check: func(t *testing.T, c *lvCaptured) {
			if !bytes.Contains(c.cassette, []byte(`"partial":true`)) {
				t.Fatal("partial line not flagged")
			}
		}},
		{name: "stubborn", timeout: 2 * time.Second, recorded: true, errHas: []string{"ignored stdin closing and SIGTERM; killed with SIGKILL"}, check: func(t *testing.T, c *lvCaptured) {
			for _, s := range []string{`"life":"stdin_closed"`, `"signal":"SIGTERM"`, `"signal":"SIGKILL"`, `"status":"signal: killed"`} {
				if !bytes.Contains(c.cassette, []byte(s)) {
					t.Fatalf("cassette lacks %s", s)
				}
			}
		}},
		{name: "flood", timeout: 3 * time.Second, errHas: []string{"did not answer tools/list"}, check: func(t *testing.T, c *lvCaptured) {
			if n := len(lvByKind(lvReadEvents(t, c.events), eventlog.KindNotification)); n < 100 {
				t.Fatalf("only %d notifications recorded", n)
			}
			if !bytes.Contains(c.cassette, []byte(`{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2,\"reason\":\"timed out after 3s\"}}`)) {
				t.Fatal("the timed-out request was not cancelled")
			}
		}},
		{name: "badversion", timeout: 10 * time.Second, errHas: []string{`server answered initialize with protocol version "1999-01-01", which witness does not support (it asked for 2025-11-25); disconnected`}, check: func(t *testing.T, c *lvCaptured) {
			if bytes.Contains(c.cassette, []byte(`notifications/initialized`)) {
				t.Fatal("initialized sent after an unsupported version")
			}
		}},
	}
	for _, hc := range cases {
		t.Run(hc.name, func(t *testing.T) {
			bin := lvBuildTestServer(t, "testdata/hostile/"+hc.name)
			grace := hc.grace
			if grace == 0 {
				grace = 200 * time.Millisecond
			}
			c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Timeout: hc.timeout,
				StdinGrace: grace, TermGrace: grace}, Calls: hc.calls})
			t.Logf("%s: ended in %s: %v", hc.name, c.dur.Round(time.Millisecond), c.err)
			if len(hc.errHas) > 0 {
				if c.err == nil {
					t.Fatal("want an error")
				}
				for _, s := range hc.errHas {
					if !strings.Contains(c.err.Error(), s) {
						t.Fatalf("error %q lacks %q", c.err, s)
					}
				}
				if exitcode.Of(c.err) != exitcode.Failure {
					t.Fatalf("exit code %v", exitcode.Of(c.err))
				}
			} else if c.err != nil {
				t.Fatal(c.err)
			}
			if c.dur > hc.timeout+5*time.Second {
				t.Fatalf("took %s", c.dur)
			}
			lvCheckGroupGone(t, c)
			if len(hc.errHas) > 0 && !hc.recorded {
				lvCheckFailedChain(t, c.events, hc.errHas[0])
			} else {
				lvCheckChain(t, c.events)
			}
			lvCheckRederive(t, c)
			if hc.check != nil {
				hc.check(t, c)
			}
		})
	}
}

func TestScenarioExchanges(t *testing.T) {
	calls, _, err := ParseScenario([]byte(`[
	 {"answer":"sampling/createMessage","result":{"role":"assistant","content":{"type":"text","text":"a"},"model":"m"}},
	 {"answer":"elicitation/create","result":{"action":"accept","content":{"name":"Ada"}}},
	 {"answer":"elicitation/create","error":{"code":-1,"message":"no"}},
	 {"method":"resources/read","params":{"uri": "file:///a"}},
	 {"method":"ping"},
	 {"tool":"t"}]`), "s.json")
	if err != nil || len(calls) != 6 || calls[3].Method != "resources/read" || string(calls[3].Params) != `{"uri":"file:///a"}` || calls[4].Params != nil || calls[0].Answer != mcp.MethodSamplingCreateMessage {
		t.Fatalf("%v %+v", err, calls)
	}
	if caps := string(scenarioCapabilities(calls)); caps != `{"elicitation":{"form":{},"url":{}},"sampling":{}}` {
		t.Fatalf("capabilities %s", caps)
	}
	if scenarioCapabilities(calls[3:]) != nil || scenarioAnswers(calls[3:]) != nil {
		t.Fatal("no answers, yet capabilities or an answer function")
	}
	answer := scenarioAnswers(calls)
	var got []string
	for _, m := range []string{mcp.MethodElicitationCreate, mcp.MethodElicitationCreate, mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage, "roots/list"} {
		res, e, ok := answer(m, nil)
		got = append(got, fmt.Sprintf("%s|%s|%v", res, e, ok))
	}
	want := []string{`{"action":"accept","content":{"name":"Ada"}}||true`, `|{"code":-1,"message":"no"}|true`, `|{"code":-1,"message":"no"}|true`,
		`{"role":"assistant","content":{"type":"text","text":"a"},"model":"m"}||true`, `||false`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("answers %q", got)
	}
}

func TestScenarioParse(t *testing.T) {
	calls, notes, err := ParseScenario([]byte(`[
	 {"kind":"tool_call","tool":"read_file","payload":{"path":"/x"}},
	 {"kind":"model_input","payload":"hi"},
	 {"tool":"echo","arguments":{"message": "a b"}},
	 {"tool":"noargs"}]`), "s.json")
	if err != nil || len(calls) != 3 || len(notes) != 1 || string(calls[1].Arguments) != `{"message":"a b"}` || calls[2].Arguments != nil {
		t.Fatalf("%v %v %+v", err, notes, calls)
	}
	for in, want := range map[string]string{
		`{}`:                               "must be a JSON list",
		`[1]`:                              "s.json:1:2: $[0]: must be a JSON object",
		`[{"kind":"foo","tool":"x"}]`:      "[0].kind: must be one of",
		`[{"tool":""}]`:                    "[0].tool: must be a non-empty string",
		`[{"tool":"x","arguments":[1]}]`:   "[0].arguments: must be a JSON object",
		`[{"tool":"x","extra":1}]`:         `s.json:1:14: $[0]: unknown field "extra"`,
		"[\n{\"tool\":\"x\",}]":            "s.json:2:13: $[0]: not valid JSON",
		`[{"method":""}]`:                  "[0].method: must be a non-empty string",
		`[{"method":"tools/call"}]`:        `[0].method: tools/call is written {"tool"`,
		`[{"method":"initialize"}]`:        "[0].method: the handshake is made by capture itself",
		`[{"method":"ping","params":[1]}]`: "[0].params: must be a JSON object",
		`[{"method":"ping","result":{}}]`:  `unknown field "result" in a method element`,
		`[{"answer":"roots/list"}]`:        "$[0]: give exactly one of result or error",
		`[{"answer":"roots/list","result":{},"error":{}}]`: "$[0]: give exactly one of result or error",
		`[{"answer":"roots/list","result":"x"}]`:           "[0].result: must be a JSON object",
		`[{"answer":7,"result":{}}]`:                       "[0].answer: must be a non-empty string",
		`[{"answer":"x","tool":"t","result":{}}]`:          `unknown field "tool" in a answer element`,
	} {
		_, _, err := ParseScenario([]byte(in), "s.json")
		if err == nil || !strings.Contains(err.Error(), want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: %v (want %q)", in, err, want)
		}
	}
}

func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(`[{"kind":"tool_call","tool":"a","payload":{"x":1}},{"tool":"b","arguments":{}}]`))
	f.Add([]byte(`[{"kind":"model_output"}]`))
	f.Add([]byte(`[{"method":"resources/read","params":{"uri":"a"}},{"answer":"roots/list","result":{"roots":[]}},{"answer":"x","error":{"code":1}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, _, err := ParseScenario(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "scenario f.json:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, c := range calls {
			n := 0
			for _, s := range []string{c.Tool, c.Method, c.Answer} {
				if s != "" {
					n++
				}
			}
			if n != 1 || (c.Answer != "") == (c.Result == nil && c.Error == nil) {
				t.Fatalf("bad element %+v", c)
			}
			for _, v := range []json.RawMessage{c.Arguments, c.Params, c.Result, c.Error} {
				if v != nil && (!json.Valid(v) || v[0] != '{' || bytes.ContainsAny(v, "\n")) {
					t.Fatalf("bad call %+v", c)
				}
			}
		}
	})
}

func TestRedactedCaptureRederives(t *testing.T) {
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	rule, err := derive.ParseRedactRule("$.arguments.name")
	if err != nil {
		t.Fatal(err)
	}
	re, err := derive.ParseRedactRule("re:Alice-[A-Za-z]+")
	if err != nil {
		t.Fatal(err)
	}
	red, err := derive.NewRedactor([]derive.RedactRule{rule, re}, []byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Redactor: red},
		Calls: []ScenarioCall{{Tool: "greet", Arguments: json.RawMessage(`{"name":"Alice-Secret"}`)}}})
	if c.err != nil {
		t.Fatal(c.err)
	}
	if bytes.Contains(c.cassette, []byte("Alice-Secret")) {
		t.Fatalf("secret in the cassette:\n%s", c.cassette)
	}
	if !bytes.Contains(c.events, []byte(`"tool":"greet"`)) {
		t.Fatal("the tool name must survive a rule on the arguments")
	}
	if bytes.Contains(c.events, []byte("Alice-Secret")) {
		t.Fatal("secret in the events")
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
}

// TestTimeoutCancelsAndContinues: a slow tool call times out, the client
// sends notifications/cancelled for its id, and the event log records the
// call without a response and the cancellation.
func TestTimeoutCancels(t *testing.T) {
	// the timeout applies to initialize and tools/list too: 2s keeps a loaded
	// machine from timing out the handshake instead of the slow call
	t.Parallel()
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Timeout: 2 * time.Second},
		Calls: []ScenarioCall{{Tool: "sleep", Arguments: json.RawMessage(`{"ms":20000}`)}}})
	if c.err == nil || !strings.Contains(c.err.Error(), "scenario[0] (tool sleep): server did not answer tools/call (id 5) within 2s") {
		t.Fatalf("err %v", c.err)
	}
	evs := lvReadEvents(t, c.events)
	if len(lvByKind(evs, eventlog.KindToolCall)) != 1 || lvCountMethod(evs, "notifications/cancelled") != 1 {
		t.Fatalf("events:\n%s", c.events)
	}
	// the go-sdk answers a cancelled call late ("context canceled"): the
	// witness records what the server did, linked to the call
	for _, r := range lvByKind(evs, eventlog.KindToolResponse) {
		if r.Call != lvByKind(evs, eventlog.KindToolCall)[0].ID {
			t.Fatalf("late response not linked: %+v", r)
		}
		if len(c.warnings) == 0 || !strings.Contains(strings.Join(c.warnings, "\n"), "server answered request 5 after it timed out and was cancelled") {
			t.Fatalf("warnings: %v", c.warnings)
		}
	}
	end := evs[len(evs)-1].End
	if !strings.Contains(end.Reason, "error: server did not answer tools/call (id 5) within 2s") {
		t.Fatalf("end reason %q", end.Reason)
	}
	lvCheckRederive(t, c)
}

// TestRederiveUnfrozen: without ATW_WITNESS_TS, event times come from the
// cassette's start and record times, so re-derivation still gives the same
// bytes.
func TestRederiveUnfrozen(t *testing.T) {
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: bin, Getenv: func(string) string { return "" }},
		Calls: []ScenarioCall{{Tool: "greet", Arguments: json.RawMessage(`{"name":"t"}`)}, {Tool: "add_tool"}}})
	if c.err != nil {
		t.Fatal(c.err)
	}
	if bytes.Contains(c.events, []byte(lvFrozenTS)) || !bytes.Contains(c.cassette, []byte(`"t":`)) {
		t.Fatal("times are not live")
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
}
