package why_test

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/why"
)

// FuzzExplainJSONLD: on any document, the two passes refuse what
// graph.ReadJSONLD refuses, and on a document it reads they give the
// answer Explain gives on the whole graph (chain or error).
func FuzzExplainJSONLD(f *testing.F) {
	model, mcp := synthlog.InjectionRun(frozen)
	r, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}, graph.Options{})
	if err != nil {
		f.Fatal(err)
	}
	doc, err := r.Graph.JSONLD()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc, "fs:e3")
	f.Add(doc, "e1")
	one, err := graph.BuildRun([]graph.LogInput{{Name: "events.jsonl", Data: mcp}}, graph.Options{})
	if err != nil {
		f.Fatal(err)
	}
	doc1, err := one.Graph.JSONLD()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc1, "e3")
	f.Fuzz(func(t *testing.T, doc []byte, ref string) {
		g, rerr := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		got := answer(why.ExplainJSONLD(bytes.NewReader(doc), "g.jsonld", ref, why.Options{MaxSteps: 50}))
		if rerr != nil {
			if got[:5] != "error" {
				t.Fatalf("ReadJSONLD refuses (%v), the two passes answer:\n%s", rerr, got)
			}
			return
		}
		if want := answer(why.Explain(g, ref, why.Options{MaxSteps: 50})); got != want {
			t.Fatalf("why %q:\n--- two passes\n%s\n--- whole graph\n%s", ref, got, want)
		}
	})
}
