package replay

import "slices"

// Impact is what a counterfactual of removing some nodes takes, in counts:
// the numbers of Counterfactual's Result without its lists, and the first
// of its not-replayable members. It costs the size of the compensation
// set, not of the graph, so that a caller can ask it for many nodes of a
// large graph (the report asks it once per finding).
type Impact struct {
	// Removed are the nodes asked for, as Result.Removed.
	Removed []Removed
	// CompensationSize is len(Result.CompensationSet).
	CompensationSize int
	// CompensationActions is Result.CompensationActions.
	CompensationActions int
	// Actions is Result.Graph.Actions: the activities of the graph.
	Actions int
	// NotReplayable is len(Result.NotReplayable).
	NotReplayable int
	// FirstNotReplayable are the first entries of Result.NotReplayable
	// (IRI order), at most as many as Impact was asked to keep.
	FirstNotReplayable []NotReplayable
	// SynergyResidual is Result.SynergyResidual.
	SynergyResidual float64
}

// Impact computes the counts of Counterfactual(Options{Remove: remove})
// and keeps its first keep not-replayable members. Its errors are
// Counterfactual's for the same request.
func (e *Engine) Impact(remove []string, keep int) (*Impact, error) {
	seeds, rm, err := e.resolve(remove)
	if err != nil {
		return nil, err
	}
	ix := e.ix
	members := ix.reach(seeds)
	slices.Sort(members) // IRI order, as the Result's lists
	im := &Impact{Removed: rm, CompensationSize: len(members), Actions: ix.acts}
	for _, i := range members {
		r := &ix.recs[i]
		if r.Kind == kindActivity {
			im.CompensationActions++
		}
		if !ix.notReplayable(i) {
			continue
		}
		im.NotReplayable++
		if len(im.FirstNotReplayable) < keep {
			im.FirstNotReplayable = append(im.FirstNotReplayable, ix.notReplayableOf(i))
		}
	}
	im.SynergyResidual = residual(int64(im.CompensationActions), int64(im.Actions))
	return im, nil
}

// notReplayableOf is the NotReplayable entry of node i, which
// ix.notReplayable says cannot be undone.
func (ix *index) notReplayableOf(i int32) NotReplayable {
	r := &ix.recs[i]
	nr := NotReplayable{Node: ix.ids[i], Kind: r.Kind.String(), Tool: r.Tool, Reasons: notReplayableReasons(r)}
	if r.Effect != nil {
		nr.Op, nr.Target = r.Effect.Op, r.Effect.Target
	}
	return nr
}

// reach is the member set of compensate(seeds), in no order, found with a
// bit set instead of closureOf's three arrays of the graph's size.
func (ix *index) reach(seeds []int32) []int32 {
	seen := make([]uint64, (ix.n()+63)/64)
	var order []int32
	visit := func(v int32) {
		if w, b := v>>6, uint64(1)<<(v&63); seen[w]&b == 0 {
			seen[w] |= b
			order = append(order, v)
		}
	}
	for _, s := range seeds {
		visit(s)
	}
	for head := 0; head < len(order); head++ {
		deps, _ := ix.dependents(order[head])
		for _, v := range deps {
			visit(v)
		}
	}
	return order
}

// countActivities counts the activities among recs.
func countActivities(recs []nodeInfo) int {
	n := 0
	for i := range recs {
		if recs[i].Kind == kindActivity {
			n++
		}
	}
	return n
}
