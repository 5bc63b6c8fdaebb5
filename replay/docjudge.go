package replay

import (
	"fmt"
	"slices"

	"github.com/agent-trace-witness/witness/graph"
)

// documentJudge is a Judge that also judges the graph document an engine
// made by NewEngineJSONLD was read from, without the graph in memory
// (docs/design/scale-history.md, "replay --seal"): Counterfactual uses it when the
// engine holds no graph. Both readings must give what Judge gives for the
// graph ReadJSONLD reads and for its counterfactual graph.
type documentJudge interface {
	Judge
	// JudgeDocument judges the document; with drop set, the document read
	// without the nodes drop names and without every reference to them
	// (graph.Without).
	JudgeDocument(drop func(iri []byte) bool) (*Judgement, error)
	// ScanDocument calls visit with each node of the document, in
	// document order (graph.ScanJSONLDView).
	ScanDocument(visit func(v *graph.NodeView) error) error
}

// judgeDocument fills the drift and verdict overlays of res with the
// judgements of the document dj reads and of its counterfactual reading:
// what Counterfactual computes with a Judge on the graph and on
// counterfactualGraph, without either graph.
func (e *Engine) judgeDocument(res *Result, dj documentJudge) error {
	drop, err := e.dropped(res, dj)
	if err != nil {
		return fmt.Errorf("counterfactual graph: %w", err)
	}
	obs, err := dj.JudgeDocument(nil)
	if err != nil {
		return fmt.Errorf("verify observed graph: %w", err)
	}
	cfj, err := dj.JudgeDocument(drop)
	if err != nil {
		return fmt.Errorf("verify counterfactual graph: %w", err)
	}
	res.Drift = drift(obs, cfj)
	res.Verdicts = &Verdicts{Nodes: []NodeVerdicts{}, Observed: obs.Verdict, Counterfactual: cfj.Verdict, Changed: obs.Verdict != cfj.Verdict}
	return nil
}

// dropped returns the test of the nodes counterfactualGraph drops: the
// compensation set of res and the relation nodes that only its members
// refer to. Those are found from the referrers the engine's builder kept
// (EngineBuilderOptions.Referrers), or else by a scan of the document
// (dj.ScanDocument), and only when the graph has relation nodes.
func (e *Engine) dropped(res *Result, dj documentJudge) (func(iri []byte) bool, error) {
	ix := e.ix
	set := map[string]struct{}{}
	for i, in := range res.in {
		if in {
			set[ix.ids[i]] = struct{}{}
		}
	}
	if ix.relRefOff != nil {
		// counterfactualGraph: a relation node goes when some node refers
		// to it and none outside the compensation set does
		for r, i := range ix.relations {
			refs := ix.relRef[ix.relRefOff[r]:ix.relRefOff[r+1]]
			if len(refs) > 0 && !slices.ContainsFunc(refs, func(from int32) bool { return !res.in[from] }) {
				set[ix.ids[i]] = struct{}{}
			}
		}
	} else if len(ix.relations) > 0 {
		// counterfactualGraph: a relation node goes when some node refers
		// to it and none outside the compensation set does
		at := make(map[string]int, len(ix.relations))
		for k, i := range ix.relations {
			at[ix.ids[i]] = k
		}
		referred := make([]bool, len(ix.relations))
		kept := make([]bool, len(ix.relations))
		err := dj.ScanDocument(func(v *graph.NodeView) error {
			_, gone := set[string(v.ID)]
			for _, p := range v.Props {
				for _, t := range p.Vals {
					if len(t.IRI) == 0 {
						continue
					}
					if k, ok := at[string(t.IRI)]; ok {
						referred[k] = true
						kept[k] = kept[k] || !gone
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for k, i := range ix.relations {
			if referred[k] && !kept[k] {
				set[ix.ids[i]] = struct{}{}
			}
		}
	}
	return func(iri []byte) bool {
		_, ok := set[string(iri)]
		return ok
	}, nil
}
