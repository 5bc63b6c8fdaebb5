package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/replay"
)

// exampleLog writes a short session: a model turn that asks for a file
// deletion, the call, its result and the deletion itself.
func exampleLog() []byte {
	const ts = "2026-08-30T14:33:00+00:00"
	var log bytes.Buffer
	w, err := eventlog.StartLog(&log, &eventlog.Header{Server: &eventlog.ServerInfo{Name: "files",
		Tools: []eventlog.ToolDef{{Name: "delete_file", SHA256: "01"}}}}, ts, eventlog.SourceObserved)
	if err != nil {
		panic(err)
	}
	f := false
	for _, e := range []*eventlog.Event{
		{Kind: eventlog.KindModelInput, Role: "user", Payload: json.RawMessage(`"tidy /data"`)},
		{Kind: eventlog.KindModelOutput, Role: "assistant", Input: "e1", Payload: json.RawMessage(`"delete /data/tmp"`)},
		{Kind: eventlog.KindToolCall, Tool: "delete_file", Method: "tools/call", RPCID: json.RawMessage(`7`), Cause: "e2", Payload: json.RawMessage(`{"path":"/data/tmp"}`)},
		{Kind: eventlog.KindToolResponse, Tool: "delete_file", RPCID: json.RawMessage(`7`), Call: "e3", IsError: &f, Payload: json.RawMessage(`{"content":[]}`)},
		{Kind: eventlog.KindExternalEffect, Tool: "delete_file", Call: "e3", Effect: &eventlog.Effect{Op: "delete", Target: "/data/tmp"}},
	} {
		e.TS, e.Source = ts, eventlog.SourceObserved
		if err := w.Append(e); err != nil {
			panic(err)
		}
	}
	if err := eventlog.Finish(w, nil, ts); err != nil {
		panic(err)
	}
	return log.Bytes()
}

// One counterfactual: had the model's output e2 (which asked for the
// deletion) not been produced, what would not have happened either (the
// compensation set, with the actions to undo), and which external effects
// would remain. Options.Remove takes event ids or node IRIs.
func ExampleEngine_Counterfactual() {
	g, err := graph.Build(graph.NewEventSource(bytes.NewReader(exampleLog()), "events.jsonl"), graph.Options{})
	if err != nil {
		panic(err)
	}
	e, err := replay.NewEngine(g)
	if err != nil {
		panic(err)
	}
	r, err := e.Counterfactual(replay.Options{Remove: []string{"e2"}})
	if err != nil {
		panic(err)
	}
	for _, rm := range r.Removed {
		fmt.Println("removed:", rm.Kind, rm.Node)
	}
	for _, m := range r.CompensationSet {
		fmt.Println("would not happen:", strings.TrimSpace(m.Kind+" "+m.Node+" "+m.Tool))
	}
	fmt.Println("compensation actions:", r.CompensationActions)
	fmt.Println("residual effects:", len(r.ResidualExternalEffects))
	// Output:
	// removed: entity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/msg/e2
	// would not happen: entity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/args/e3
	// would not happen: activity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/call/e3 delete_file
	// would not happen: entity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/effect/e5 delete_file
	// would not happen: entity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/msg/e2
	// would not happen: entity urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/result/e4 delete_file
	// compensation actions: 1
	// residual effects: 0
}
