package capture

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The fast encoder writes exactly the bytes of the general one, for every
// kind and field the witness writes.
func TestEncodeFastEqualsSlow(t *testing.T) {
	var logs [][]byte
	logs = append(logs, sampleLog(t, goodSigner), sampleLog(t))
	for _, name := range []string{"hansard_scenario_1.jsonl", "mcp_stdio_001.jsonl", "mcp_stdio_live_001.jsonl"} {
		out, _ := importFile(t, name, goodSigner)
		logs = append(logs, out)
	}
	path := writeTemp(t, sampleLog(t, goodSigner))
	_, err := AppendLog(path, bytes.NewReader([]byte(appendInput)), appendOpts())
	must(t, err)
	data, _ := os.ReadFile(path)
	logs = append(logs, data)
	n := 0
	for _, l := range logs {
		for _, e := range decodeAll(t, l) {
			fast, err := encodeEventFast(e, false)
			must(t, err)
			slow, err := encodeEventSlow(e)
			must(t, err)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("differ:\n%s\n%s", fast, slow)
			}
			n++
		}
	}
	// odd values: escapes, non-ASCII, big numbers, nil and empty slices,
	// whitespace in raw members, pointers to false
	f := false
	odd := []*Event{
		{Kind: KindToolCall, Tool: "t\"\\\n\u2028é<>&\x01", Payload: json.RawMessage(` { "b" : 1.0, "a" : [ ] } `), RPCID: json.RawMessage(` "x" `), Seq: 1 << 60, IsError: &f,
			Wire: &WireRef{Offsets: []int64{}}, Legacy: &Legacy{Format: "f", Line: 3, Orphan: true, SealRef: "s", Unsealed: &f}},
		{Kind: KindExternalEffect, Effect: &Effect{Op: "write"}, Wire: &WireRef{Cassette: "c"}, Redacted: true, RPCError: true, Payload: json.RawMessage(`null`)},
		{Kind: KindMessage, Message: &Message{Direction: "in", Recipients: []string{"b", "a"}}, Header: &Header{Notes: []string{"x"}}, End: &End{Signatures: []Signature{{KeyID: "k"}}}},
		{Kind: KindAmbiguous, Payload: json.RawMessage(`{"text":"[{\"id\":1}]","reasons":["batch"],"readings":[{"rpc_id_text":"1.0","decoders":["exact-first"]}]}`), Wire: &WireRef{Offsets: []int64{7}}},
		{Kind: KindToolCall, Tool: "t", Numbers: map[string]string{"$.b": "-0", "$.a": "1.0", "$['é']": "1E2"}, Payload: json.RawMessage(`{"a":1,"b":0,"é":100}`)},
	}
	for _, e := range odd {
		fast, err := encodeEventFast(e, false)
		must(t, err)
		slow, err := encodeEventSlow(e)
		must(t, err)
		if !bytes.Equal(fast, slow) {
			t.Fatalf("differ:\n%s\n%s", fast, slow)
		}
	}
	// invalid UTF-8 takes the general path
	bad := &Event{Kind: KindModelInput, Role: "\xff"}
	if _, err := encodeEventFast(bad, false); err == nil {
		t.Fatal("invalid UTF-8 on the fast path")
	}
	if b, err := EncodeEvent(bad); err != nil || !bytes.Contains(b, []byte("\ufffd")) {
		t.Fatalf("%s %v", b, err)
	}
	if n < 40 {
		t.Fatalf("only %d events compared", n)
	}
}
