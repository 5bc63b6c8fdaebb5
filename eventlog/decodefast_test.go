package eventlog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// sameDecode checks that eventlog.DecodeEventFast, and FastReader's
// decoding, agree with eventlog.DecodeEvent (Wire aside, which the fast
// path skips).
func sameDecode(t *testing.T, line []byte) {
	sameDecodeBy(t, line, eventlog.DecodeEventFast)
	sameDecodeBy(t, line, eventlog.DecodeEventFastShared)
}

func sameDecodeBy(t *testing.T, line []byte, fast func([]byte) (*eventlog.Event, *eventlog.ParseError)) {
	want, werr := eventlog.DecodeEvent(line)
	got, gerr := fast(line)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("line %q: capture err %v, fast err %v", line, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("line %q: errors differ: %v / %v", line, werr, gerr)
		}
		return
	}
	if got.Wire == nil {
		want.Wire = nil
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("line %q:\ncapture %+v\nfast    %+v", line, want, got)
	}
}

func TestDecodeEventFastAgrees(t *testing.T) {
	logs := [][]byte{richLog(t), eventlog.SampleLog(t, eventlog.GoodSigner), synthetic(t, 3000, 9), importATW(t, "hansard_scenario_1.jsonl")}
	for _, l := range logs {
		for _, line := range bytes.Split(bytes.TrimSuffix(l, []byte("\n")), []byte("\n")) {
			sameDecode(t, line)
		}
	}
	odd := []string{
		`{"v":1}`, `{"v":1,"v":1}`, ` {"v":1,"seq":0,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":0,"id":"e\u0030","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":[1,2.5e3,true,null,"\u00e9"]},"wire":{"offsets":[1]}}`,
		`{"v":1,"seq":01,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":1,}}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"bogus","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","is_error":null,"effect":{"op":"read","bogus":1}}`,
		"{\"v\":1,\"seq\":1,\"id\":\"e\xff\",\"session\":\"s\",\"kind\":\"tool_call\",\"ts\":\"x\",\"source\":\"observed\",\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
		`[]`, ``, `{`, `{"v":1} x`,
		`{"id":"e1","kind":"ambiguous","payload":{"bytes":3,"direction":"c2s","reasons":["batch"],"sha256":"x","text":"[1]"},"payload_sha256":"x","prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1,"wire":{"offsets":[0]}}`,
		`{"id":"e1","kind":"tool_call","numbers":{"$.a":"1.0","$.b":"-0"},"payload":{"a":1,"b":0},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
		`{"id":"e1","kind":"tool_call","numbers":{"$.a":1},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
		`{"id":"e1","kind":"tool_call","numbers":[],"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
	}
	// effects: the quick decoder's object of op, target and reason, and
	// what it hands to encoding/json
	for _, eff := range []string{`{}`, `{"op":"read"}`, `{"reason":"r","target":"t","op":"o"}`, `{"op":"a\u00e9\n"}`,
		`{"op":"a","op":"b"}`, `{"OP":"a"}`, `{"op":null}`, `{"op":1}`, `{ "op":"a"}`, `{"op":"a",}`, `{"op":"a"`, `{"target":"t"}`,
		`{"op":"a","extra":"b"}`, `null`, `[]`, `{"op":"a"}x`, "{\"op\":\"\xff\"}", `{"op":"a","reason":""}`} {
		odd = append(odd, `{"effect":`+eff+`,"id":"e1","is_error":true,"kind":"external_effect","payload":{"a":1},"prev":"0000000000000000000000000000000000000000000000000000000000000000","rpc_id":"r","seq":1,"session":"s","source":"observed","ts":"x","v":1}`)
	}
	for _, l := range odd {
		sameDecode(t, []byte(l))
	}
}

func FuzzDecodeEventFast(f *testing.F) {
	for _, line := range bytes.Split(richLog(f), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"v":1,"seq":0,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":[1,2.5e3]}}`))
	f.Add([]byte(`{"id":"e1","kind":"ambiguous","numbers":{"$.a":"1.0"},"payload":{"text":"[1]"},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`))
	f.Add([]byte(`{"effect":{"op":"write","reason":"r\u00e9","target":"/a"},"id":"e1","is_error":false,"kind":"external_effect","payload":{"a":1},"prev":"0000000000000000000000000000000000000000000000000000000000000000","rpc_id":7,"seq":1,"session":"s","source":"observed","ts":"x","v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameDecode(t, line)
	})
}

// richLog is the graph tests' sample log (graph/fixture_test.go): every kind,
// escapes and non-ASCII text in payloads, string and number JSON-RPC ids.
func richLog(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := eventlog.NewWriter(&buf, "sess-1")
	f := false
	tr := true
	evs := []*eventlog.Event{
		{Kind: eventlog.KindSessionStart, TS: "2026-08-30T14:33:00+00:00", Source: eventlog.SourceObserved, Header: &eventlog.Header{
			Format: "witness-events", WitnessVersion: "0.2.0", Pairing: "jsonrpc-id",
			Seal: &eventlog.SealRef{Digest: "9edc4d89189a690d3e379381523729807a48b325f9b14329a2f25874507fd8d2", WitnessID: "hansard-1"},
			Server: &eventlog.ServerInfo{Name: "mcp-servers/everything", Version: "2.0.0", ProtocolVersion: "2025-06-18", Command: "node", Args: []string{"dist/index.js", "stdio"},
				ToolsSHA256: "aa", Tools: []eventlog.ToolDef{{Name: "read_file", SHA256: "bb", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}, {Name: "delete_file", SHA256: "cc"}}},
		}},
		{Kind: eventlog.KindModelInput, TS: "2026-08-30T14:33:01.500+00:00", Source: eventlog.SourceReported, Role: "user", Payload: json.RawMessage(`"Tidy /data, please. \"quote\"\ttab ünïcødé 𝄞"`)},
		{Kind: eventlog.KindModelOutput, TS: "2026-08-30T14:33:02+00:00", Source: eventlog.SourceReported, Role: "assistant", Input: "e1", Payload: json.RawMessage(`{"tool_calls":[{"name":"read_file"}]}`)},
		{Kind: eventlog.KindToolCall, TS: "2026-08-30T14:33:03+00:00", Source: eventlog.SourceObserved, Tool: "read_file", Method: "tools/call", RPCID: json.RawMessage(`2`), Cause: "e2", Payload: json.RawMessage(`{"path":"/data/a.txt"}`)},
		{Kind: eventlog.KindToolResponse, TS: "2026-08-30T14:33:03.25+00:00", Source: eventlog.SourceObserved, Tool: "read_file", Method: "tools/call", RPCID: json.RawMessage(`2`), Call: "e3", IsError: &f, Payload: json.RawMessage(`{"content":[{"type":"text","text":"line1\nline2"}]}`)},
		{Kind: eventlog.KindExternalEffect, TS: "2026-08-30T14:33:03.25+00:00", Source: eventlog.SourceObserved, Tool: "read_file", Call: "e3", Effect: &eventlog.Effect{Op: "read", Target: "/data/a.txt", Reason: "annotation readOnlyHint"}},
		{Kind: eventlog.KindToolCall, TS: "2026-08-30T14:33:04+00:00", Source: eventlog.SourceObserved, Tool: "delete_file", Method: "tools/call", RPCID: json.RawMessage(`"req-3"`), Cause: "e2", Payload: json.RawMessage(`{"path":"/data/b.txt"}`)},
		{Kind: eventlog.KindToolResponse, TS: "2026-08-30T14:33:05+00:00", Source: eventlog.SourceObserved, Tool: "delete_file", RPCID: json.RawMessage(`"req-3"`), Call: "e6", IsError: &tr, RPCError: true, Payload: json.RawMessage(`{"code":-32602,"message":"bad path"}`)},
		{Kind: eventlog.KindNotification, TS: "2026-08-30T14:33:05+00:00", Source: eventlog.SourceObserved, Method: "notifications/tools/list_changed"},
		{Kind: eventlog.KindMessage, TS: "2026-08-30T14:33:06+00:00", Source: eventlog.SourceReported, Cause: "e4", Message: &eventlog.Message{Direction: "outgoing", Conversation: "c1", Sender: "agent-a", Recipients: []string{"agent-b", "agent-c"}, Text: "done", Operation: "multicast"}},
		{Kind: eventlog.KindToolResponse, TS: "2026-08-30T14:33:07+00:00", Source: eventlog.SourceObserved, Tool: "read_file", Call: "e99", Payload: json.RawMessage(`{}`)},
		{Kind: eventlog.KindMCPRequest, TS: "2026-08-30T14:33:08+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirC2S, Method: "resources/read", RPCID: json.RawMessage(`7`), Payload: json.RawMessage(`{"uri":"file:///a"}`)},
		{Kind: eventlog.KindMCPRequest, TS: "2026-08-30T14:33:08+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirS2C, Method: "elicitation/create", RPCID: json.RawMessage(`0`), During: "e3", Payload: json.RawMessage(`{"message":"name?"}`)},
		{Kind: eventlog.KindUserInput, TS: "2026-08-30T14:33:08+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirC2S, Method: "elicitation/create", RPCID: json.RawMessage(`0`), Call: "e12", Payload: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)},
		{Kind: eventlog.KindModelInput, TS: "2026-08-30T14:33:09+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirS2C, Method: "sampling/createMessage", RPCID: json.RawMessage(`1`), DuringCandidates: []string{"e3", "e6"}, Payload: json.RawMessage(`{"messages":[]}`)},
		{Kind: eventlog.KindNotification, TS: "2026-08-30T14:33:09+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirS2C, Method: "notifications/progress", Concerns: "e3", Payload: json.RawMessage(`{"progress":1,"progressToken":"t"}`)},
		{Kind: eventlog.KindMCPResponse, TS: "2026-08-30T14:33:10+00:00", Source: eventlog.SourceObserved, Direction: eventlog.DirS2C, Method: "resources/read", RPCID: json.RawMessage(`7`), Call: "e11", Payload: json.RawMessage(`{"contents":[]}`)},
	}
	for _, e := range evs {
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	end := &eventlog.Event{Kind: eventlog.KindSessionEnd, TS: "2026-08-30T14:34:00+00:00", Source: eventlog.SourceObserved, End: &eventlog.End{Count: w.Count(), Head: w.Head(), Reason: "closed"}}
	if err := w.Append(end); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// synthetic is a log of n events from internal/synthlog.
func synthetic(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := synthlog.Generate(&b, n, seed, fmt.Sprintf("synthetic-%d", seed)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
