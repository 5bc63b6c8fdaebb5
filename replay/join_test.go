package replay_test

import (
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/replay"
)

// Removing the untrusted read's result of a joined run puts the turn that
// read it, the write it asked for and the write's result in the
// compensation set, across channels; the first turn and the read stay.
func TestCounterfactualAcrossChannels(t *testing.T) {
	model, mcp := synthlog.InjectionRun("2026-09-01T10:00:00+00:00")
	run, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mb, fs := run.Logs[0].Base, run.Logs[1].Base
	eng, err := replay.NewEngine(run.Graph)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Counterfactual(replay.Options{Remove: []string{graph.ResultIRI(fs, "e2")}})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, m := range r.CompensationSet {
		in[m.Node] = true
	}
	for _, want := range []string{graph.TurnIRI(mb, "e4"), graph.CallIRI(fs, "e3"), graph.ResultIRI(fs, "e4"), graph.MsgIRI(mb, "e3"), graph.TurnIRI(mb, "e6")} {
		if !in[want] {
			t.Errorf("compensation set lacks %s", want)
		}
	}
	for _, keep := range []string{graph.TurnIRI(mb, "e2"), graph.CallIRI(fs, "e1"), graph.MsgIRI(mb, "e1")} {
		if in[keep] {
			t.Errorf("compensation set holds %s, which does not depend on the read's result", keep)
		}
	}
}
