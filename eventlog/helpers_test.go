package eventlog

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testkeys"
)

var (
	goodKey    = bytes.Repeat([]byte{7}, 32)
	goodSigner = testkeys.HMAC{ID: "k-good", Key: goodKey}
	evilSigner = testkeys.HMAC{ID: "k-evil", Key: bytes.Repeat([]byte{9}, 32)}
	trusted    = testkeys.Set{Keys: map[string][]byte{"k-good": goodKey}, Unknown: ErrUnknownKey}
)

const frozenTS = "2026-08-30T14:33:00+00:00"

// sampleLog writes a log with every choke point, links and a signed end:
// the bytes capture's Recorder writes for the same calls.
func sampleLog(t testing.TB, signers ...Signer) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{Server: &ServerInfo{Name: "stub", ProtocolVersion: "2025-11-25"}}, frozenTS, SourceObserved)
	if err != nil {
		t.Fatal(err)
	}
	f := false
	for _, ev := range []struct {
		e       *Event
		payload any
	}{
		{&Event{Kind: KindModelInput, Role: "system", Source: SourceReported}, "read /data only"},
		{&Event{Kind: KindModelOutput, Role: "assistant", Input: "e1", Source: SourceReported}, "call read_file"},
		{&Event{Kind: KindToolCall, Tool: "read_file", Method: "tools/call", RPCID: json.RawMessage(`2`), Cause: "e2", Source: SourceObserved}, map[string]any{"path": "/data/x"}},
		{&Event{Kind: KindToolResponse, Tool: "read_file", Call: "e3", RPCID: json.RawMessage(`2`), IsError: &f, Source: SourceObserved}, json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"isError":false}`)},
		{&Event{Kind: KindExternalEffect, Tool: "read_file", Call: "e3", Effect: &Effect{Op: "read", Target: "/data/x", Reason: "test"}, Source: SourceObserved}, nil},
		{&Event{Kind: KindMessage, Message: &Message{Direction: "outgoing", Conversation: "c1", Sender: "a", Text: "hello", Operation: "direct"}, Cause: "e4", Source: SourceObserved}, nil},
	} {
		ev.e.TS = frozenTS
		if ev.payload != nil {
			must(t, SetPayload(ev.e, ev.payload))
		}
		must(t, w.Append(ev.e))
	}
	if err := Finish(w, signers, frozenTS); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func verify(data []byte, opts VerifyLogOptions) (*LogReport, error) {
	return VerifyLog(bytes.NewReader(data), "events.jsonl", opts)
}

func lines(data []byte) [][]byte {
	return bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func join(ls [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range ls {
		b.Write(l)
		if !bytes.HasSuffix(l, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func decodeAll(t testing.TB, data []byte) []*Event {
	t.Helper()
	rd := NewReader(bytes.NewReader(data), "out")
	var evs []*Event
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
