package eventlog_test

import (
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// appendInput is what a framework appends (capture append): the encoders
// must agree on what AppendLog writes too.
const appendInput = `{"kind":"model_input","role":"system","content":"Only read files under /data","ref":"sys"}
{"kind":"model_input","role":"user","content":[{"type":"text","text":"tidy /data"}],"ref":"u1"}
{"kind":"model_output","content":"I will delete /data/secret.txt","input":"u1","ref":"o1"}
{"kind":"tool_call","tool":"delete_file","arguments":{"target":"/data/secret.txt"},"cause":"o1","ref":"c1"}
{"kind":"tool_response","tool":"delete_file","result":{"content":[{"type":"text","text":"deleted"}],"isError":false}}
{"kind":"external_effect","tool":"delete_file","effect":{"op":"delete","target":"/data/secret.txt","reason":"reported by the framework"}}
`

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func decodeAll(t testing.TB, data []byte) []*eventlog.Event {
	t.Helper()
	rd := eventlog.NewReader(bytes.NewReader(data), "out")
	var evs []*eventlog.Event
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}

// importATW imports a file of agent-trace-witness 0.1.0 (testdata/compat)
// with capture's importer.
func importATW(t testing.TB, name string, signers ...eventlog.Signer) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testrepo.Root(t), "testdata/compat/atw-0.1.0", name))
	must(t, err)
	var out bytes.Buffer
	if _, err := derive.ImportATW(bytes.NewReader(data), &out, derive.ImportOptions{Name: name, TS: eventlog.FrozenTS, Signers: signers}); err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
	return out.Bytes()
}

// The fast encoder writes exactly the bytes of the general one, for every
// kind and field the witness writes.
func TestEncodeFastEqualsSlow(t *testing.T) {
	var logs [][]byte
	logs = append(logs, eventlog.SampleLog(t, eventlog.GoodSigner), eventlog.SampleLog(t))
	for _, name := range []string{"hansard_scenario_1.jsonl", "mcp_stdio_001.jsonl", "mcp_stdio_live_001.jsonl"} {
		out := importATW(t, name, eventlog.GoodSigner)
		logs = append(logs, out)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	must(t, os.WriteFile(path, eventlog.SampleLog(t, eventlog.GoodSigner), 0o644))
	_, err := derive.AppendLog(path, bytes.NewReader([]byte(appendInput)), derive.AppendOptions{Verifier: eventlog.Trusted, Signers: []eventlog.Signer{eventlog.GoodSigner}, Clock: func() string { return eventlog.FrozenTS }})
	must(t, err)
	data, _ := os.ReadFile(path)
	logs = append(logs, data)
	n := 0
	for _, l := range logs {
		for _, e := range decodeAll(t, l) {
			fast, err := eventlog.EncodeEventFast(e, false)
			must(t, err)
			slow, err := eventlog.EncodeEventSlow(e)
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
	odd := []*eventlog.Event{
		{Kind: eventlog.KindToolCall, Tool: "t\"\\\n\u2028é<>&\x01", Payload: json.RawMessage(` { "b" : 1.0, "a" : [ ] } `), RPCID: json.RawMessage(` "x" `), Seq: 1 << 60, IsError: &f,
			Wire: &eventlog.WireRef{Offsets: []int64{}}, Legacy: &eventlog.Legacy{Format: "f", Line: 3, Orphan: true, SealRef: "s", Unsealed: &f}},
		{Kind: eventlog.KindExternalEffect, Effect: &eventlog.Effect{Op: "write"}, Wire: &eventlog.WireRef{Cassette: "c"}, Redacted: true, RPCError: true, Payload: json.RawMessage(`null`)},
		{Kind: eventlog.KindMessage, Message: &eventlog.Message{Direction: "in", Recipients: []string{"b", "a"}}, Header: &eventlog.Header{Notes: []string{"x"}}, End: &eventlog.End{Signatures: []eventlog.Signature{{KeyID: "k"}}}},
		{Kind: eventlog.KindAmbiguous, Payload: json.RawMessage(`{"text":"[{\"id\":1}]","reasons":["batch"],"readings":[{"rpc_id_text":"1.0","decoders":["exact-first"]}]}`), Wire: &eventlog.WireRef{Offsets: []int64{7}}},
		{Kind: eventlog.KindToolCall, Tool: "t", Numbers: map[string]string{"$.b": "-0", "$.a": "1.0", "$['é']": "1E2"}, Payload: json.RawMessage(`{"a":1,"b":0,"é":100}`)},
		{Kind: eventlog.KindModelOutput, Input: "e1", Payload: json.RawMessage(`{"api":"openai.chat"}`), Wire: &eventlog.WireRef{Cassette: "cassette.jsonl", Offsets: []int64{}, X: 12}},
	}
	for _, e := range odd {
		fast, err := eventlog.EncodeEventFast(e, false)
		must(t, err)
		slow, err := eventlog.EncodeEventSlow(e)
		must(t, err)
		if !bytes.Equal(fast, slow) {
			t.Fatalf("differ:\n%s\n%s", fast, slow)
		}
	}
	// invalid UTF-8 takes the general path
	bad := &eventlog.Event{Kind: eventlog.KindModelInput, Role: "\xff"}
	if _, err := eventlog.EncodeEventFast(bad, false); err == nil {
		t.Fatal("invalid UTF-8 on the fast path")
	}
	if b, err := eventlog.EncodeEvent(bad); err != nil || !bytes.Contains(b, []byte("\ufffd")) {
		t.Fatalf("%s %v", b, err)
	}
	if n < 40 {
		t.Fatalf("only %d events compared", n)
	}
}
