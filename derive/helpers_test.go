package derive

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/testkeys"
)

var (
	goodKey    = bytes.Repeat([]byte{7}, 32)
	goodSigner = testkeys.HMAC{ID: "k-good", Key: goodKey}
	evilSigner = testkeys.HMAC{ID: "k-evil", Key: bytes.Repeat([]byte{9}, 32)}
	trusted    = testkeys.Set{Keys: map[string][]byte{"k-good": goodKey}, Unknown: eventlog.ErrUnknownKey}
)

const frozenTS = "2026-08-30T14:33:00+00:00"

// sampleLog writes a log with every choke point, links and a signed end.
func sampleLog(t testing.TB, signers ...eventlog.Signer) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Server: &eventlog.ServerInfo{Name: "stub", ProtocolVersion: "2025-11-25"}}, frozenTS, eventlog.SourceObserved)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }})
	in, err := rec.ModelInput(ModelInputEvent{Role: "system", Content: "read /data only", Source: eventlog.SourceReported})
	must(t, err)
	out, err := rec.ModelOutput(ModelOutputEvent{Content: "call read_file", Source: eventlog.SourceReported})
	must(t, err)
	if out != "e2" || in != "e1" {
		t.Fatalf("ids %s %s", in, out)
	}
	call, err := rec.ToolCall(ToolCallEvent{Tool: "read_file", Arguments: map[string]any{"path": "/data/x"}, RPCID: json.RawMessage(`2`), Cause: out})
	must(t, err)
	resp, err := rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(`2`), Result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"isError":false}`)})
	must(t, err)
	_, err = rec.ExternalEffect(ExternalEffectEvent{Tool: "read_file", Effect: eventlog.Effect{Op: "read", Target: "/data/x", Reason: "test"}})
	must(t, err)
	_, err = rec.message(messageEvent{Message: eventlog.Message{Direction: "outgoing", Conversation: "c1", Sender: "a", Text: "hello", Operation: "direct"}, Cause: resp})
	must(t, err)
	_ = call
	if err := eventlog.Finish(w, signers, frozenTS); err != nil {
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

func verify(data []byte, opts eventlog.VerifyLogOptions) (*eventlog.LogReport, error) {
	return eventlog.VerifyLog(bytes.NewReader(data), "events.jsonl", opts)
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

func wantStatus(t *testing.T, what string, data []byte, opts eventlog.VerifyLogOptions, status string, code exitcode.Code) *eventlog.LogReport {
	t.Helper()
	rep, err := verify(data, opts)
	if rep.Status != status {
		t.Fatalf("%s: status %s, want %s; findings %v", what, rep.Status, status, rep.Findings)
	}
	if exitcode.Of(err) != code {
		t.Fatalf("%s: exit code %v, want %v (err %v)", what, exitcode.Of(err), code, err)
	}
	return rep
}

// failedLog writes a short log ended with the given reason and failure.
func failedLog(t *testing.T, reason, failure string, signers ...eventlog.Signer) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Server: &eventlog.ServerInfo{Name: "stub"}}, frozenTS, eventlog.SourceObserved)
	must(t, err)
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }})
	_, err = rec.ToolCall(ToolCallEvent{Tool: "read_file", Arguments: map[string]any{"path": "/data/x"}, Source: eventlog.SourceObserved})
	must(t, err)
	must(t, eventlog.FinishWith(w, eventlog.EndOptions{Signers: signers, TS: frozenTS, Reason: reason, Failure: failure}))
	return buf.Bytes()
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
