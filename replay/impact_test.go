package replay

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/google/go-cmp/cmp"
)

// impactOf is the Impact a Counterfactual's Result implies.
func impactOf(r *Result, keep int) *Impact {
	im := &Impact{Removed: r.Removed, CompensationSize: len(r.CompensationSet), CompensationActions: r.CompensationActions,
		Actions: r.Graph.Actions, NotReplayable: len(r.NotReplayable), SynergyResidual: r.SynergyResidual}
	if keep > 0 && len(r.NotReplayable) > 0 {
		im.FirstNotReplayable = r.NotReplayable[:min(keep, len(r.NotReplayable))]
	}
	return im
}

// TestImpactEqualsCounterfactual: for every node of every fixture graph,
// alone and (every fifth) with its neighbour in IRI order, on engines over the graph and
// over its document, Impact is what Counterfactual's Result says, and its
// errors are Counterfactual's.
func TestImpactEqualsCounterfactual(t *testing.T) {
	compared, withNR := 0, 0
	for name, doc := range streamFixtures(t) {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byGraph, err := NewEngine(g)
		if err != nil {
			t.Fatal(err)
		}
		byDoc, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatal(err)
		}
		reqs := [][]string{{"e1"}, {"nope"}, {}, {"e3", "e3"}}
		for i, n := range g.Nodes {
			reqs = append(reqs, []string{n.ID})
			if i%5 == 1 {
				reqs = append(reqs, []string{n.ID, g.Nodes[i-1].ID})
			}
		}
		for _, e := range []*Engine{byGraph, byDoc} {
			for _, req := range reqs {
				r, werr := e.Counterfactual(Options{Remove: req})
				for _, keep := range []int{0, 1, 20} {
					im, err := e.Impact(req, keep)
					if (werr == nil) != (err == nil) || (err != nil && err.Error() != werr.Error()) {
						t.Fatalf("%s %q: Impact error %v, Counterfactual's %v", name, req, err, werr)
					}
					if err != nil {
						continue
					}
					if d := cmp.Diff(impactOf(r, keep), im); d != "" {
						t.Fatalf("%s %q keep %d: (-counterfactual +impact)\n%s", name, req, keep, d)
					}
					compared++
					if im.NotReplayable > 0 {
						withNR++
					}
				}
			}
		}
	}
	if compared < 2000 || withNR < 100 {
		t.Fatalf("only %d comparisons, %d with not-replayable members", compared, withNR)
	}
}
