package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/google/go-cmp/cmp"
)

// TestWhatIfIsCounterfactual: the what-if of a finding (replay.Impact) is
// what a full counterfactual of its first activity says, for every
// activity of a synthetic run: the counts, the first maxWhatIfEffects
// not-replayable members named as before, and the note for the others.
func TestWhatIfIsCounterfactual(t *testing.T) {
	var b bytes.Buffer
	if err := synthlog.Generate(&b, 1500, 3, "whatif"); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(eventlog.NewReader(&b, "events.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// one activity whose effects are more than a what-if names: 25
	// deletions it generated, and an unlabelled one without op
	hub := "urn:x:hub"
	mustAdd := func(s, p string, o graph.Term) {
		if err := g.Add(s, p, o); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(hub, graph.RDFType, graph.Ref(graph.ProvActivity))
	for i := range 25 {
		e := fmt.Sprintf("urn:x:hub/effect/%02d", i)
		mustAdd(e, graph.RDFType, graph.Ref(graph.ProvEntity))
		mustAdd(e, graph.RDFType, graph.Ref(graph.WExternalEffect))
		mustAdd(e, graph.WEffectOp, graph.Term{Lex: "delete"})
		if i > 0 {
			mustAdd(e, graph.WEffectTarget, graph.Term{Lex: fmt.Sprintf("/data/%d", i)})
		}
		mustAdd(e, graph.ProvWasGeneratedBy, graph.Ref(hub))
	}
	eng, err := replay.NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	run := &runState{g: g}
	compared, noted := 0, 0
	for _, n := range g.Nodes {
		if graph.DrawKind(n) != "activity" {
			continue
		}
		// an entity step first: the what-if is of the first activity
		c := &Chain{Node: n.ID, Steps: []Step{{Node: "urn:x:entity", Kind: "entity"}, {Node: n.ID, Kind: "activity", Label: "L"}}}
		got := whatIf(eng, run, c)
		r, err := eng.Counterfactual(replay.Options{Remove: []string{n.ID}})
		if err != nil {
			t.Fatal(err)
		}
		want := &What{Cause: n.ID, Label: "L", Removed: len(r.CompensationSet), Actions: r.CompensationActions, OfActions: r.Graph.Actions,
			NotReplayable: len(r.NotReplayable), Residual: r.SynergyResidual}
		for i, e := range r.NotReplayable {
			if i == maxWhatIfEffects {
				want.Note = fmt.Sprintf("%d more not-replayable nodes", len(r.NotReplayable)-i)
				noted++
				break
			}
			s := e.Op
			if e.Target != "" {
				s += " " + e.Target
			}
			if s == "" {
				s = strings.ReplaceAll(graph.NodeLabel(g.Node(e.Node)), "\n", " ")
			}
			if len(e.Reasons) > 0 {
				s += " (" + strings.Join(e.Reasons, "; ") + ")"
			}
			want.Effects = append(want.Effects, s)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s: (-counterfactual +what-if)\n%s", n.ID, d)
		}
		compared++
	}
	if compared < 100 || noted == 0 {
		t.Fatalf("%d activities compared, %d with more than %d not-replayable nodes", compared, noted, maxWhatIfEffects)
	}
}
