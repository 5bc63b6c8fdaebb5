package derive_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
)

// An agent framework records its five choke points through a Recorder:
// each call returns the new event's id, responses pair with their calls by
// the exact JSON-RPC id, and the log is verified by package eventlog. A
// real recording signs the end (EndOptions.Signers, from package keyring);
// this one is unsigned, which VerifyLog accepts only with AllowUnsigned.
func ExampleRecorder() {
	const ts = "2026-08-30T14:33:00+00:00" // frozen, as ATW_WITNESS_TS does
	var log bytes.Buffer
	w, err := eventlog.StartLog(&log, &eventlog.Header{Server: &eventlog.ServerInfo{Name: "files"}}, ts, eventlog.SourceReported)
	if err != nil {
		panic(err)
	}
	rec := derive.NewRecorder(w, derive.RecorderOptions{Source: eventlog.SourceReported, Clock: func() string { return ts }})

	in, _ := rec.ModelInput(derive.ModelInputEvent{Role: "user", Content: "tidy /data"})
	out, _ := rec.ModelOutput(derive.ModelOutputEvent{Content: "I will delete /data/tmp"})
	call, _ := rec.ToolCall(derive.ToolCallEvent{Tool: "delete_file", Arguments: map[string]any{"path": "/data/tmp"}, RPCID: json.RawMessage(`7`), Cause: out})
	resp, _ := rec.ToolResponse(derive.ToolResponseEvent{RPCID: json.RawMessage(`7`), Result: map[string]any{"content": []any{}}})
	eff, _ := rec.ExternalEffect(derive.ExternalEffectEvent{Tool: "delete_file", Effect: eventlog.Effect{Op: "delete", Target: "/data/tmp"}})
	if err := rec.Finish(eventlog.EndOptions{Reason: "completed"}); err != nil {
		panic(err)
	}
	fmt.Println("ids:", in, out, call, resp, eff)

	rep, err := eventlog.VerifyLog(bytes.NewReader(log.Bytes()), "events.jsonl", eventlog.VerifyLogOptions{AllowUnsigned: true})
	fmt.Println("verify:", rep.Status, rep.Lines, "lines,", rep.Events, "events, err", err)
	for _, f := range rep.Findings {
		fmt.Println(f.Severity+":", f)
	}
	// Output:
	// ids: e1 e2 e3 e4 e5
	// verify: ok 7 lines, 5 events, err <nil>
	// warning: line 7 (e6): unsigned: the session_end carries no signature
}
