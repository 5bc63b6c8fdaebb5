package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
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

// Build reads an event log (here from memory; usually events.jsonl) and
// returns its PROV-DM graph, whose canonical N-Quads have one digest for
// the same log.
func ExampleBuild() {
	g, err := graph.Build(graph.NewEventSource(bytes.NewReader(exampleLog()), "events.jsonl"), graph.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("nodes:", g.Len())
	call := g.ByEventID("e3")
	fmt.Println("e3:", call.ID)
	fmt.Println("  types:", call.Types)
	fmt.Println("  informed by:", call.Refs(graph.ProvWasInformedBy))
	digest, err := g.WriteNQuads(io.Discard)
	fmt.Println("digest:", digest, err)
	// Output:
	// nodes: 12
	// e3: urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/call/e3
	//   types: [http://www.w3.org/ns/prov#Activity https://w3id.org/agent-trace-witness/ns#ToolCall]
	//   informed by: [urn:witness:ce36c2a028d3cdc84f110825e8bfae8c/turn/e2]
	// digest: 4e07aada42370868a5e85fd9e7285f6021b78c42037db86487c84b972e948f25 <nil>
}
