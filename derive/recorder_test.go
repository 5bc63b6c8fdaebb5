package derive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"sync"
	"testing"
)

// Responses pair by the exact JSON-RPC id token: 0 works, and 1 and "1"
// are different ids, whatever order the answers come in.
func TestRecorderPairsByExactID(t *testing.T) {
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{}, frozenTS, "")
	must(t, err)
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }})
	c0, _ := rec.ToolCall(ToolCallEvent{Tool: "a", RPCID: json.RawMessage(`0`)})
	c1, _ := rec.ToolCall(ToolCallEvent{Tool: "b", RPCID: json.RawMessage(`1`)})
	cs, _ := rec.ToolCall(ToolCallEvent{Tool: "c", RPCID: json.RawMessage(`"1"`)})
	rs, _ := rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(`"1"`), Result: json.RawMessage(`{"isError":true}`)})
	r1, _ := rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(` 1 `), Result: json.RawMessage(`{}`)})
	r0, _ := rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(`0`), RPCError: true, Result: json.RawMessage(`{"code":-32601,"message":"nope"}`)})
	orphan, _ := rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(`0`), Result: json.RawMessage(`{}`)})
	must(t, eventlog.Finish(w, nil, frozenTS))
	evs := decodeAll(t, buf.Bytes())
	byID := map[string]*eventlog.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	for resp, call := range map[string]string{rs: cs, r1: c1, r0: c0} {
		if byID[resp].Call != call || byID[resp].Tool != byID[call].Tool {
			t.Errorf("%s paired with %q, want %s", resp, byID[resp].Call, call)
		}
	}
	if !*byID[rs].IsError || !*byID[r0].IsError || !byID[r0].RPCError || *byID[r1].IsError {
		t.Error("is_error")
	}
	if byID[orphan].Call != "" {
		t.Errorf("a second answer to id 0 was paired with %s", byID[orphan].Call)
	}
	if len(rec.openCalls()) != 0 {
		t.Errorf("open calls %v", rec.openCalls())
	}
	if _, err := eventlog.VerifyLog(bytes.NewReader(buf.Bytes()), "x", eventlog.VerifyLogOptions{AllowUnsigned: true}); err != nil {
		t.Fatal(err)
	}
}

// A proxy records both directions at once: the chain stays intact.
func TestRecorderConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{}, frozenTS, "")
	must(t, err)
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				id := json.RawMessage(fmt.Sprintf(`"%d-%d"`, g, i))
				if _, err := rec.ToolCall(ToolCallEvent{Tool: "t", RPCID: id}); err != nil {
					t.Error(err)
				}
				if _, err := rec.ToolResponse(ToolResponseEvent{RPCID: id, Result: map[string]any{"g": g}}); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	must(t, rec.Finish(eventlog.EndOptions{Signers: []eventlog.Signer{goodSigner}}))
	rep, err := eventlog.VerifyLog(bytes.NewReader(buf.Bytes()), "x", eventlog.VerifyLogOptions{Verifier: trusted})
	if err != nil || rep.Events != 400 {
		t.Fatalf("%v %+v", err, rep)
	}
}

func TestRecorderValidation(t *testing.T) {
	rec := NewRecorder(eventlog.NewWriter(&bytes.Buffer{}, "s"), RecorderOptions{})
	if _, err := rec.ToolCall(ToolCallEvent{}); err == nil {
		t.Error("tool call without tool")
	}
	if _, err := rec.ExternalEffect(ExternalEffectEvent{Tool: "x"}); err == nil {
		t.Error("effect without op")
	}
	if _, err := rec.notification(notificationEvent{}); err == nil {
		t.Error("notification without method")
	}
	if _, err := rec.ModelInput(ModelInputEvent{Content: json.RawMessage(`{bad`)}); err == nil {
		t.Error("invalid JSON content")
	}
}
