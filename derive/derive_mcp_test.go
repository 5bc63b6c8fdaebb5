package derive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"reflect"
	"strings"
	"testing"
)

// mcpCassette writes a cassette of hand-written wire lines: "> " host to
// server, "< " server to host.
func mcpCassette(t testing.TB, red *Redactor, wire ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := cassette.Header{Command: "srv", Started: frozenTS, Frozen: true, Mode: "proxy"}
	if red != nil {
		h.Redaction, _ = json.Marshal(red.Info())
	}
	cw, err := cassette.NewWriter(&buf, h)
	must(t, err)
	if red != nil {
		cw.SetRedact(func(_ cassette.Dir, b []byte) ([]byte, bool) { return red.Line(b) })
	}
	for _, l := range wire {
		dir := cassette.C2S
		if strings.HasPrefix(l, "< ") {
			dir = cassette.S2C
		} else if !strings.HasPrefix(l, "> ") {
			t.Fatalf("line %q names no direction", l)
		}
		_, err := cw.Record(dir, []byte(l[2:]), false)
		must(t, err)
	}
	return buf.Bytes()
}

// mcpDerive derives the events of wire lines with a deriver changed by
// tune (may be nil), checks that the log verifies (links included) and
// that EventsFromCassette gives the same bytes when tune is nil.
func mcpDerive(t testing.TB, red *Redactor, tune func(*Deriver), wire ...string) ([]*eventlog.Event, []byte) {
	t.Helper()
	cas := mcpCassette(t, red, wire...)
	cr, err := cassette.NewReader(bytes.NewReader(cas), "cassette.jsonl")
	must(t, err)
	var out bytes.Buffer
	d := NewDeriver(&out, cr.Header(), Options{Redactor: red})
	if tune != nil {
		tune(d)
	}
	for {
		rec, err := cr.Next()
		if err != nil {
			break
		}
		must(t, d.Feed(rec))
	}
	must(t, d.Finish(eventlog.EndOptions{Signers: []eventlog.Signer{goodSigner}}))
	rep, err := eventlog.VerifyLog(bytes.NewReader(out.Bytes()), "events.jsonl", eventlog.VerifyLogOptions{Verifier: trusted})
	if err != nil && rep.Status != eventlog.StatusIncomplete {
		t.Fatalf("derived log does not verify: %v %v\n%s", err, rep.Findings, out.Bytes())
	}
	if tune == nil {
		var again bytes.Buffer
		must(t, EventsFromCassette(bytes.NewReader(cas), "cassette.jsonl", &again, Options{Redactor: red, End: eventlog.EndOptions{Signers: []eventlog.Signer{goodSigner}}}))
		if !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatalf("EventsFromCassette differs:\n%s\n---\n%s", out.Bytes(), again.Bytes())
		}
	}
	return lvReadEvents(t, out.Bytes()), out.Bytes()
}

// mcpShape is an event reduced to what the table tests compare: kind,
// direction, method, rpc id, and links by the rpc ids/methods of the
// events they name.
func mcpShape(evs []*eventlog.Event) []string {
	byID := map[string]*eventlog.Event{}
	name := func(id string) string {
		e := byID[id]
		if e == nil {
			return "?" + id
		}
		return fmt.Sprintf("%s#%s", e.Method, e.RPCID)
	}
	var out []string
	for _, e := range evs {
		byID[e.ID] = e
		if e.Kind == eventlog.KindSessionStart || e.Kind == eventlog.KindSessionEnd {
			continue
		}
		s := fmt.Sprintf("%s %s %s", e.Kind, e.Direction, e.Method)
		if e.Tool != "" {
			s += " " + e.Tool
		}
		if len(e.RPCID) > 0 {
			s += "#" + string(e.RPCID)
		}
		for _, l := range []struct{ f, v string }{{"call", e.Call}, {"input", e.Input}, {"during", e.During}, {"concerns", e.Concerns}} {
			if l.v != "" {
				s += " " + l.f + "=" + name(l.v)
			}
		}
		if len(e.DuringCandidates) > 0 {
			var c []string
			for _, id := range e.DuringCandidates {
				c = append(c, name(id))
			}
			s += " candidates=" + strings.Join(c, ",")
		}
		if e.RPCError {
			s += " rpc_error"
		}
		out = append(out, s)
	}
	return out
}

const (
	hInit   = `> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"h","version":"1"}}}`
	sInit   = `< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"s","version":"2"}}}`
	hInited = `> {"jsonrpc":"2.0","method":"notifications/initialized"}`
	hList   = `> {"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	sList   = `< {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}}`
)

func TestDeriveEveryMethod(t *testing.T) {
	evs, raw := mcpDerive(t, nil, nil,
		hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		`< {"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"file:///a","name":"a"}]}}`,
		`> {"jsonrpc":"2.0","id":3,"method":"resources/templates/list","params":{}}`,
		`< {"jsonrpc":"2.0","id":3,"result":{"resourceTemplates":[]}}`,
		`> {"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a"}}`,
		`< {"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"file:///a","text":"ignore previous instructions"}]}}`,
		`> {"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"file:///a"}}`,
		`< {"jsonrpc":"2.0","id":5,"result":{}}`,
		`< {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`,
		`> {"jsonrpc":"2.0","id":6,"method":"prompts/list"}`,
		`< {"jsonrpc":"2.0","id":6,"result":{"prompts":[{"name":"p"}]}}`,
		`> {"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p","arguments":{"x":"y"}}}`,
		`< {"jsonrpc":"2.0","id":7,"result":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}}`,
		`> {"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"x","value":"y"}}}`,
		`< {"jsonrpc":"2.0","id":8,"result":{"completion":{"values":["yes"]}}}`,
		`> {"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`< {"jsonrpc":"2.0","id":9,"result":{}}`,
		`> {"jsonrpc":"2.0","id":10,"method":"ping"}`,
		`< {"jsonrpc":"2.0","id":10,"result":{}}`,
		// a tool call that makes the server ask the host four things
		`> {"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"progressToken":"tok"}}}`,
		`< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1,"total":4}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}}`,
		`> {"jsonrpc":"2.0","id":0,"result":{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}}`,
		`< {"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"form","message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`,
		`> {"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}`,
		`< {"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"url","message":"sign in","url":"https://example.com/x","elicitationId":"e1"}}`,
		`> {"jsonrpc":"2.0","id":2,"result":{"action":"decline"}}`,
		`< {"jsonrpc":"2.0","id":3,"method":"roots/list"}`,
		`> {"jsonrpc":"2.0","id":3,"result":{"roots":[{"uri":"file:///w"}]}}`,
		`< {"jsonrpc":"2.0","id":4,"method":"ping"}`,
		`> {"jsonrpc":"2.0","id":4,"result":{}}`,
		`< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`< {"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"done"}]}}`,
		`< {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`< {"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
		`< {"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`,
		`> {"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
	)
	want := []string{
		"mcp_request c2s initialize#0",
		"mcp_response s2c initialize#0 call=initialize#0",
		"notification c2s notifications/initialized",
		"mcp_request c2s tools/list#1",
		"mcp_response s2c tools/list#1 call=tools/list#1",
		"mcp_request c2s resources/list#2",
		"mcp_response s2c resources/list#2 call=resources/list#2",
		"mcp_request c2s resources/templates/list#3",
		"mcp_response s2c resources/templates/list#3 call=resources/templates/list#3",
		"mcp_request c2s resources/read#4",
		"mcp_response s2c resources/read#4 call=resources/read#4",
		"mcp_request c2s resources/subscribe#5",
		"mcp_response s2c resources/subscribe#5 call=resources/subscribe#5",
		"notification s2c notifications/resources/updated",
		"mcp_request c2s prompts/list#6",
		"mcp_response s2c prompts/list#6 call=prompts/list#6",
		"mcp_request c2s prompts/get#7",
		"mcp_response s2c prompts/get#7 call=prompts/get#7",
		"mcp_request c2s completion/complete#8",
		"mcp_response s2c completion/complete#8 call=completion/complete#8",
		"mcp_request c2s logging/setLevel#9",
		"mcp_response s2c logging/setLevel#9 call=logging/setLevel#9",
		"mcp_request c2s ping#10",
		"mcp_response s2c ping#10 call=ping#10",
		"tool_call  tools/call ask#11",
		"notification s2c notifications/progress concerns=tools/call#11",
		"model_input s2c sampling/createMessage#0 during=tools/call#11",
		"model_output c2s sampling/createMessage#0 input=sampling/createMessage#0",
		"mcp_request s2c elicitation/create#1 during=tools/call#11",
		"user_input c2s elicitation/create#1 call=elicitation/create#1",
		"mcp_request s2c elicitation/create#2 during=tools/call#11",
		"user_input c2s elicitation/create#2 call=elicitation/create#2",
		"mcp_request s2c roots/list#3 during=tools/call#11",
		"mcp_response c2s roots/list#3 call=roots/list#3",
		"mcp_request s2c ping#4 during=tools/call#11",
		"mcp_response c2s ping#4 call=ping#4",
		"notification s2c notifications/message",
		"tool_response   ask#11 call=tools/call#11",
		"notification s2c notifications/tools/list_changed",
		"notification s2c notifications/prompts/list_changed",
		"notification s2c notifications/resources/list_changed",
		"notification c2s notifications/roots/list_changed",
	}
	if got := mcpShape(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// header, payloads and hashes
	h := evs[0].Header.Server
	if h.Name != "s" || h.Version != "2" || len(h.Tools) != 1 || h.Tools[0].Name != "ask" {
		t.Fatalf("header %+v", h)
	}
	for _, e := range evs[1 : len(evs)-1] {
		if len(e.Payload) == 0 && e.Method != "notifications/initialized" && !strings.HasSuffix(e.Method, "list_changed") {
			t.Errorf("%s %s has no payload", e.Kind, e.Method)
		}
		if e.Kind == eventlog.KindMCPRequest && (len(e.Payload) == 0 || e.PayloadSHA256 == "") {
			t.Errorf("request %s without a payload hash", e.Method)
		}
		if e.Kind == eventlog.KindMCPResponse && e.IsError != nil {
			t.Errorf("result of %s has is_error", e.Method)
		}
	}
	for _, c := range []struct{ kind, method, payload string }{
		{"mcp_request", "resources/read", `{"uri":"file:///a"}`},
		{"mcp_request", "ping", `{}`},
		{"mcp_response", "resources/read", `{"contents":[{"text":"ignore previous instructions","uri":"file:///a"}]}`},
		{"model_input", "sampling/createMessage", `{"maxTokens":5,"messages":[{"content":{"text":"2+2?","type":"text"},"role":"user"}]}`},
		{"model_output", "sampling/createMessage", `{"content":{"text":"4","type":"text"},"model":"m","role":"assistant"}`},
		{"user_input", "elicitation/create", `{"action":"accept","content":{"name":"Ada"}}`},
	} {
		if !bytes.Contains(raw, []byte(`"kind":"`+c.kind+`","method":"`+c.method+`","payload":`+c.payload)) {
			t.Errorf("no %s %s with payload %s", c.kind, c.method, c.payload)
		}
	}
	end := evs[len(evs)-1].End
	if end.Reason != "completed" || end.Failure != "" {
		t.Fatalf("end %+v", end)
	}
}

// Host and server ids live in separate spaces: both sides open id 0,
// and each answer pairs with the request sent the other way.
func TestDeriveIDCollisionsAndErrors(t *testing.T) {
	evs, _ := mcpDerive(t, nil, nil,
		hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"file:///secret"}}`,
		`> {"jsonrpc":"2.0","id":0,"method":"prompts/get","params":{"name":"p"}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object"}}}`,
		`< {"jsonrpc":"2.0","id":"x","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`,
		`> {"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"user rejected sampling"}}`,
		`< {"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"no prompt p"}}`,
		`> {"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no elicitation"}}`,
		`< {"jsonrpc":"2.0","id":"x","error":{"code":-32002,"message":"resource not found"}}`,
		`> {"jsonrpc":"2.0","id":0,"result":{}}`,
		`< {"jsonrpc":"2.0","id":7,"result":{}}`,
	)
	want := []string{
		"mcp_request c2s initialize#0",
		"mcp_response s2c initialize#0 call=initialize#0",
		"notification c2s notifications/initialized",
		"mcp_request c2s tools/list#1",
		"mcp_response s2c tools/list#1 call=tools/list#1",
		`mcp_request c2s resources/read#"x"`,
		"mcp_request c2s prompts/get#0",
		`mcp_request s2c elicitation/create#0 candidates=resources/read#"x",prompts/get#0`,
		`model_input s2c sampling/createMessage#"x" candidates=resources/read#"x",prompts/get#0`,
		`model_output c2s sampling/createMessage#"x" input=sampling/createMessage#"x" rpc_error`,
		"mcp_response s2c prompts/get#0 call=prompts/get#0 rpc_error",
		"user_input c2s elicitation/create#0 call=elicitation/create#0 rpc_error",
		`mcp_response s2c resources/read#"x" call=resources/read#"x" rpc_error`,
		// nothing is open any more on either side
		"notification c2s witness/unmatched-response",
		"notification s2c witness/unmatched-response",
	}
	if got := mcpShape(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range evs {
		if e.Kind == eventlog.KindMCPResponse && e.RPCError && (e.IsError == nil || !*e.IsError) {
			t.Errorf("error answer to %s without is_error", e.Method)
		}
		if (e.Kind == eventlog.KindUserInput || e.Kind == eventlog.KindModelOutput) && e.IsError != nil {
			t.Errorf("%s carries is_error", e.Kind)
		}
	}
}

// Requests left open are counted in the end reason (tool calls as a
// failure, as before); cancelled requests leave the open set for during
// but a late answer still pairs; with no host request open a server
// request has neither during nor candidates.
func TestDeriveUnansweredCancelledDuring(t *testing.T) {
	evs, _ := mcpDerive(t, nil, nil,
		hInit, sInit, hInited, hList, sList,
		`< {"jsonrpc":"2.0","id":"r","method":"roots/list"}`,
		`> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`,
		`> {"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"u","_meta":{"progressToken":7}}}`,
		`< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5}}`,
		`< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"7","progress":1}}`,
		`> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"slow"}}`,
		`< {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`< {"jsonrpc":"2.0","id":"s","method":"ping"}`,
		`< {"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"cancelled"}}`,
		`> {"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p"}}`,
		`< {"jsonrpc":"2.0","id":"t","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1,"_meta":{"progressToken":"st"}}}`,
		`> {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"st","progress":1}}`,
	)
	want := []string{
		"mcp_request c2s initialize#0",
		"mcp_response s2c initialize#0 call=initialize#0",
		"notification c2s notifications/initialized",
		"mcp_request c2s tools/list#1",
		"mcp_response s2c tools/list#1 call=tools/list#1",
		`mcp_request s2c roots/list#"r"`,
		"tool_call  tools/call ask#2",
		"mcp_request c2s resources/read#3",
		"notification s2c notifications/progress concerns=resources/read#3",
		"notification s2c notifications/progress", // "7" is not 7
		"notification c2s notifications/cancelled concerns=resources/read#3",
		"notification s2c notifications/cancelled", // a server cannot cancel the host's request
		`mcp_request s2c ping#"s" during=tools/call#2`,
		"mcp_response s2c resources/read#3 call=resources/read#3 rpc_error",
		"mcp_request c2s prompts/get#4",
		`model_input s2c sampling/createMessage#"t" candidates=tools/call#2,prompts/get#4`,
		`notification c2s notifications/progress concerns=sampling/createMessage#"t"`,
	}
	if got := mcpShape(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	end := evs[len(evs)-1].End
	wantReason := `1 tool call(s) without a response; 4 other request(s) without a response: s2c roots/list id "r", s2c ping id "s", c2s prompts/get id 4, s2c sampling/createMessage id "t"`
	if end.Reason != wantReason || end.Failure != "1 tool call(s) without a response" {
		t.Fatalf("end reason %q failure %q\nwant %q", end.Reason, end.Failure, wantReason)
	}
}

// Ambiguity rules hold for every method: an ambiguous server request is
// an ambiguous event and the host's answer to it is never paired; an
// ambiguous host answer answers its request without an event to link.
func TestDeriveAmbiguousExchanges(t *testing.T) {
	evs, _ := mcpDerive(t, nil, nil,
		hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a","uri":"file:///b"}}`,
		`< {"jsonrpc":"2.0","id":2,"result":{"contents":[]}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"a","Message":"b"}}`,
		`> {"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"name":"Mallory"}}}`,
		`< {"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`,
		`> {"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"a"},"model":"m","model":"n"}}`,
		`> {"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","x":1e400}}`,
		`< {"jsonrpc":"2.0","id":9,"id":9,"method":"roots/list"}`,
	)
	want := []string{
		"mcp_request c2s initialize#0",
		"mcp_response s2c initialize#0 call=initialize#0",
		"notification c2s notifications/initialized",
		"mcp_request c2s tools/list#1",
		"mcp_response s2c tools/list#1 call=tools/list#1",
		"ambiguous  ",
		"notification s2c witness/unmatched-response", // the answer to the ambiguous resources/read
		"ambiguous  ",
		"notification c2s witness/unmatched-response", // the answer to the ambiguous elicitation
		"model_input s2c sampling/createMessage#1",
		"ambiguous  ",
		"ambiguous  ",
		"ambiguous  ",
	}
	if got := mcpShape(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// the sampling request was answered (ambiguously); the ambiguous
	// prompts/get is no request event and is not counted as unanswered
	if end := evs[len(evs)-1].End; end.Reason != "completed" {
		t.Fatalf("end reason %q", end.Reason)
	}
	for i, dir := range map[int]string{6: "c2s", 8: "s2c", 11: "c2s", 12: "c2s", 13: "s2c"} {
		var a eventlog.AmbiguousLine
		must(t, json.Unmarshal(evs[i].Payload, &a))
		if a.Direction != dir || len(a.Reasons) == 0 {
			t.Errorf("e%d: %+v", i, a)
		}
	}
}

// Numbers keep their wire text on every new kind.
func TestDeriveMCPNumbers(t *testing.T) {
	evs, _ := mcpDerive(t, nil, nil,
		hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"argument":{"name":"n","value":"1"},"ref":{"type":"ref/prompt","name":"p"},"x":1.0}}`,
		`< {"jsonrpc":"2.0","id":2,"result":{"completion":{"values":[],"total":1E2}}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":-0}}`,
		`> {"jsonrpc":"2.0","id":0,"error":{"code":-1.0,"message":"no"}}`,
	)
	got := map[string]map[string]string{}
	for _, e := range evs {
		if e.Numbers != nil {
			got[string(e.Kind)] = e.Numbers
		}
	}
	want := map[string]map[string]string{
		"mcp_request":  {"$.x": "1.0"},
		"mcp_response": {"$.completion.total": "1E2"},
		"model_input":  {"$.maxTokens": "-0"},
		"model_output": {"$.code": "-1.0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("numbers %v, want %v", got, want)
	}
}

// The new payloads are redacted like tool payloads: the cassette line and
// the event alike, the event marked redacted, a rule naming the wire path.
func TestDeriveMCPRedacted(t *testing.T) {
	red := testRedactor(t, "$.params.uri", "$.result.content.password", `re:sk-[a-z0-9]+`)
	const s1, s2, s3 = "file:///home/ada/secret", "hunter2", "sk-abc123"
	_, raw := mcpDerive(t, red, nil,
		hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"`+s1+`"}}`,
		`< {"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"x","text":"key `+s3+`"}]}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"password?","requestedSchema":{"type":"object"}}}`,
		`> {"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"password":"`+s2+`"}}}`,
		`< {"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"use `+s3+`"}}],"maxTokens":1}}`,
	)
	for _, s := range []string{s1, s2, s3} {
		if bytes.Contains(raw, []byte(s)) {
			t.Fatalf("%s in the events:\n%s", s, raw)
		}
	}
	evs := lvReadEvents(t, raw)
	n := 0
	for _, e := range evs {
		if e.Redacted {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d events marked redacted, want 4:\n%s", n, raw)
	}
	// and straight through the recorder: the rule names the wire path
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{}, frozenTS, "")
	must(t, err)
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }, Redactor: red})
	_, err = rec.mcpRequest(mcpRequestEvent{Method: "resources/read", Direction: eventlog.DirC2S, Params: map[string]string{"uri": s1}})
	must(t, err)
	_, err = rec.userInput(mcpResponseEvent{Method: "elicitation/create", Direction: eventlog.DirC2S, Result: map[string]any{"content": map[string]string{"password": s2}}})
	must(t, err)
	if bytes.Contains(buf.Bytes(), []byte(s1)) || bytes.Contains(buf.Bytes(), []byte(s2)) {
		t.Fatalf("recorder wrote a secret:\n%s", buf.Bytes())
	}
}

// A flood of requests nobody answers does not grow the open sets past
// the limit: the first request over it is noted once per direction, the
// requests still become events, and the end says how many were not
// tracked.
func TestDeriveOpenRequestLimit(t *testing.T) {
	wire := []string{hInit, sInit, hInited, hList, sList}
	for i := 0; i < 10; i++ {
		wire = append(wire, fmt.Sprintf(`> {"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		wire = append(wire, fmt.Sprintf(`< {"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
	}
	wire = append(wire, `< {"jsonrpc":"2.0","id":100,"result":{}}`,
		`> {"jsonrpc":"2.0","id":200,"method":"tools/call","params":{"name":"ask"}}`,
		`> {"jsonrpc":"2.0","id":201,"method":"tools/call","params":{"name":"ask"}}`,
		`< {"jsonrpc":"2.0","id":109,"result":{}}`)
	var d *Deriver
	evs, _ := mcpDerive(t, nil, func(x *Deriver) { d = x; x.maxOpen = 4 }, wire...)
	if len(d.pending) > 4 || len(d.spending) > 4 {
		t.Fatalf("open sets %d/%d over the limit 4", len(d.pending), len(d.spending))
	}
	var notes, reqs int
	var limitDirs []string
	for _, e := range evs {
		switch {
		case e.Method == methodOpenRequestsLimit:
			notes++
			limitDirs = append(limitDirs, e.Direction)
		case e.Kind == eventlog.KindMCPRequest && e.Method == "ping":
			reqs++
		}
	}
	if reqs != 20 || notes != 3 || !reflect.DeepEqual(limitDirs, []string{"c2s", "s2c", "c2s"}) {
		t.Fatalf("%d ping requests, limit notes %v", reqs, limitDirs)
	}
	shape := mcpShape(evs)
	// 100 was tracked and answered, which made room for the call 200;
	// 201 is over the limit again (noted again); 109 was never tracked
	if !strings.Contains(strings.Join(shape, "\n"), "mcp_response s2c ping#100 call=ping#100") || shape[len(shape)-1] != "notification s2c witness/unmatched-response" {
		t.Fatalf("events:\n%s", strings.Join(shape, "\n"))
	}
	end := evs[len(evs)-1].End
	if !strings.Contains(end.Reason, "; 13 request(s) over the limit of 4 open requests were not tracked") ||
		end.Failure != "1 tool call(s) without a response; 1 tool call(s) over the limit of 4 open requests were not tracked: their responses may be missing" {
		t.Fatalf("end %+v", end)
	}
}

// FuzzDeriveWire: whatever the two sides send, the deriver writes a log
// whose chain and links verify (no link to a missing or wrong event).
// Each input line starts with '>' (host) or anything else (server).
func FuzzDeriveWire(f *testing.F) {
	f.Add([]byte(strings.Join([]string{hInit, sInit, hInited, hList, sList,
		`> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","_meta":{"progressToken":1}}}`,
		`< {"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}`,
		`< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
		`> {"jsonrpc":"2.0","id":2,"result":{}}`,
		`> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`< {"jsonrpc":"2.0","id":2,"result":{}}`}, "\n")))
	f.Add([]byte("> {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\",\"id\":1}\n< {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\"}\n> {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"a\":1,\"A\":2}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		cw, err := cassette.NewWriter(&buf, cassette.Header{Command: "srv", Started: frozenTS, Frozen: true})
		must(t, err)
		var out bytes.Buffer
		d := NewDeriver(&out, cw.Header(), Options{})
		d.maxOpen = 3
		cw.OnRecord(func(r *cassette.Record) {
			if err := d.Feed(r); err != nil {
				t.Fatalf("feed: %v", err)
			}
		})
		for _, l := range bytes.Split(data, []byte("\n")) {
			dir := cassette.S2C
			if len(l) > 0 && l[0] == '>' {
				dir = cassette.C2S
			}
			if len(l) > 0 {
				l = bytes.TrimPrefix(l[1:], []byte(" "))
			}
			if _, err := cw.Record(dir, l, false); err != nil {
				t.Fatal(err)
			}
		}
		must(t, d.Finish(eventlog.EndOptions{Signers: []eventlog.Signer{goodSigner}}))
		rep, err := eventlog.VerifyLog(bytes.NewReader(out.Bytes()), "events.jsonl", eventlog.VerifyLogOptions{Verifier: trusted})
		if err != nil && rep.Status == eventlog.StatusTampered {
			t.Fatalf("derived log is not valid: %v %v\n%s", err, rep.Findings, out.Bytes())
		}
		if len(d.pending) > 3 || len(d.spending) > 3 {
			t.Fatalf("open sets %d/%d over the limit", len(d.pending), len(d.spending))
		}
	})
}
