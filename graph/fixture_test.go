package graph

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// sampleLog writes a small, realistic session with eventlog.Writer and
// returns its bytes.
func sampleLog(t testing.TB) []byte {
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

func buildBytes(t testing.TB, log []byte, opts Options) *Graph {
	t.Helper()
	g, err := Build(eventlog.NewReader(bytes.NewReader(log), "events.jsonl"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
