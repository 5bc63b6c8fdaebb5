package graph_test

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// FuzzBuildRun: two logs whatever their bytes join or are refused with an
// error, never a panic; a join is deterministic.
func FuzzBuildRun(f *testing.F) {
	model, mcp := synthlog.InjectionRun("2026-09-01T10:00:00+00:00")
	f.Add(model, mcp)
	f.Add(model, model)
	f.Add(mcp[:len(mcp)/2], model)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		in := []graph.LogInput{{Name: "a/events.jsonl", Data: a}, {Name: "b/events.jsonl", Data: b}}
		r1, err := graph.BuildRun(in, graph.Options{})
		if err != nil {
			return
		}
		r2, err := graph.BuildRun(in, graph.Options{})
		if err != nil {
			t.Fatalf("second join failed: %v", err)
		}
		var x, y bytes.Buffer
		if _, err := r1.Graph.WriteNQuads(&x); err != nil {
			return
		}
		r2.Graph.WriteNQuads(&y)
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Fatal("join not deterministic")
		}
	})
}
