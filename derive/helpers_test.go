package derive

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"testing"
)

// testKeys is an HMAC signer and verifier over a small set of keys.
type testKeys map[string][]byte

type testSigner struct {
	id  string
	key []byte
}

func (s testSigner) KeyID() string     { return s.id }
func (s testSigner) Algorithm() string { return "hmac-sha256" }
func (s testSigner) Sign(msg []byte) (string, error) {
	m := hmac.New(sha256.New, s.key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil)), nil
}

func (k testKeys) Verify(keyID, alg string, msg []byte, sig string) error {
	key, ok := k[keyID]
	if !ok {
		return fmt.Errorf("key %s: %w", keyID, eventlog.ErrUnknownKey)
	}
	if alg != "hmac-sha256" {
		return fmt.Errorf("unsupported alg %q", alg)
	}
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	want := hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return errors.New("signature mismatch")
	}
	return nil
}

var (
	goodKey    = bytes.Repeat([]byte{7}, 32)
	goodSigner = testSigner{id: "k-good", key: goodKey}
	evilSigner = testSigner{id: "k-evil", key: bytes.Repeat([]byte{9}, 32)}
	trusted    = testKeys{"k-good": goodKey}
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
	_, err = rec.Message(MessageEvent{Message: eventlog.Message{Direction: "outgoing", Conversation: "c1", Sender: "a", Text: "hello", Operation: "direct"}, Cause: resp})
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
