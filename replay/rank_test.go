package replay

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomRecords builds a random dependency graph of n nodes with about
// m edges; some edges point backwards to create cycles when cyclic is set.
func randomRecords(seed uint64, n, m int, cyclic bool) []record {
	r := rand.New(rand.NewPCG(seed, 7))
	recs := make([]record, n)
	for i := range recs {
		k := kindEntity
		if r.IntN(3) == 0 {
			k = kindActivity
		}
		if i == 0 {
			k = kindAgent
		}
		recs[i] = record{ID: fmt.Sprintf("n%03d", i), Kind: k}
		if k == kindEntity && r.IntN(5) == 0 {
			recs[i].Effect = &effectFact{Op: []string{"delete", "read", "send", "write"}[r.IntN(4)]}
		}
		if k == kindActivity && r.IntN(4) == 0 {
			recs[i].Destructive = true
		}
	}
	for e := 0; e < m; e++ {
		a, b := r.IntN(n), r.IntN(n)
		if !cyclic && a < b {
			a, b = b, a
		}
		recs[a].Deps = append(recs[a].Deps, dep{Edge: edge(1 + r.IntN(4)), On: recs[b].ID})
	}
	return recs
}

func bruteWeights(ix *index, s int32) weights {
	c := ix.compensate([]int32{s})
	var w weights
	for _, v := range c.order {
		w.nodes++
		if ix.recs[v].Kind == kindActivity {
			w.activities++
		}
		if len(notReplayableReasons(&ix.recs[v])) > 0 {
			w.notRep++
		}
	}
	return w
}

func TestReachAllMatchesBruteForce(t *testing.T) {
	cases := []struct {
		n, m   int
		cyclic bool
	}{
		{1, 0, false}, {5, 3, false}, {40, 30, false}, {40, 60, false}, {120, 100, false},
		{120, 240, true}, {300, 280, false}, {300, 600, true}, {500, 400, false},
	}
	for ci, tc := range cases {
		for seed := uint64(0); seed < 6; seed++ {
			ix, err := buildIndex(randomRecords(seed*31+uint64(ci), tc.n, tc.m, tc.cyclic))
			if err != nil {
				t.Fatal(err)
			}
			for _, budget := range []int{1, 3, rankBudgetWords, -1} {
				got, st := ix.reachAll(budget, 0, false)
				if budget == -1 {
					got, st = ix.reachAll(rankBudgetWords, 1000, false)
					if st.CoreComps > 0 && st.Method != "tree+pruned-dfs" {
						t.Fatalf("expected pruned traversals: %+v", st)
					}
				}
				acts, _ := ix.reachAll(rankBudgetWords, 1000, true)
				for i := int32(0); i < int32(ix.n()); i++ {
					if ix.recs[i].Kind == kindActivity && acts[i] != bruteWeights(ix, i) {
						t.Fatalf("activities-only: node %s got %+v", ix.ids[i], acts[i])
					}
					if want := bruteWeights(ix, i); got[i] != want {
						t.Fatalf("case %d seed %d budget %d node %s: got %+v want %+v (stats %+v)", ci, seed, budget, ix.ids[i], got[i], want, st)
					}
				}
			}
		}
	}
}

func TestReachAllChunksAndTrees(t *testing.T) {
	// A chain is all tree: no bitset pass.
	var recs []record
	for i := 0; i < 50; i++ {
		r := record{ID: fmt.Sprintf("c%02d", i), Kind: kindActivity}
		if i > 0 {
			r.Deps = []dep{{edgeWasInformedBy, fmt.Sprintf("c%02d", i-1)}}
		}
		recs = append(recs, r)
	}
	ix, _ := buildIndex(recs)
	ws, st := ix.reachAll(rankBudgetWords, dfsWorkFactor, false)
	if st.CoreComps != 0 || st.Chunks != 0 {
		t.Fatalf("chain should be all tree: %+v", st)
	}
	if ws[0].nodes != 50 || ws[49].nodes != 1 {
		t.Fatalf("chain sizes: %d %d", ws[0].nodes, ws[49].nodes)
	}
	// A diamond-rich graph with a tiny budget uses many chunks.
	ix, _ = buildIndex(randomRecords(99, 400, 900, false))
	_, st = ix.reachAll(1, 0, false)
	if st.CoreComps == 0 || st.Chunks < 2 || st.ChunkBits != 64 {
		t.Fatalf("expected a chunked core pass: %+v", st)
	}
}

func TestRankOrder(t *testing.T) {
	recs := []record{
		{ID: "agent", Kind: kindAgent},
		{ID: "a1", Kind: kindActivity, Tool: "t"},
		{ID: "a2", Kind: kindActivity, Tool: "t"},
		{ID: "a3", Kind: kindActivity, Tool: "rm", Destructive: true},
		{ID: "e1", Kind: kindEntity, Deps: []dep{{edgeWasGeneratedBy, "a1"}}},
		{ID: "e2", Kind: kindEntity, Deps: []dep{{edgeWasGeneratedBy, "a2"}}},
		{ID: "e3", Kind: kindEntity, Effect: &effectFact{Op: "delete"}, Deps: []dep{{edgeWasGeneratedBy, "a3"}}},
		{ID: "a4", Kind: kindActivity},
	}
	ix, err := buildIndex(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := ix.rank(rankBudgetWords, 0)
	var order []string
	for _, e := range got {
		order = append(order, fmt.Sprintf("%d:%s:%d:%d", e.Rank, e.Activity, e.CompensationSize, e.NotReplayable))
	}
	want := "[1:a3:2:2 2:a1:2:0 3:a2:2:0 4:a4:1:0]"
	if fmt.Sprint(order) != want {
		t.Fatalf("rank order %v, want %s", order, want)
	}
	if got[0].SynergyResidual != 0.25 {
		t.Fatalf("synergy residual %v", got[0].SynergyResidual)
	}
}

// TestRankTopIsPrefix checks the top-k selection against the full ranking
// on random graphs, many of whose activities tie on size and on
// not-replayable count (the order then rests on the IRIs).
func TestRankTopIsPrefix(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		n := 5 + int(seed)*13
		ix, err := buildIndex(randomRecords(seed, n, n+int(seed%5)*n/3, seed%3 == 0))
		if err != nil {
			t.Fatal(err)
		}
		all, acts, _ := ix.rank(rankBudgetWords, 0)
		if acts != len(all) {
			t.Fatalf("seed %d: %d activities, %d entries", seed, acts, len(all))
		}
		for _, top := range []int{1, 2, 3, 7, acts - 1, acts, acts + 5} {
			if top < 1 {
				continue
			}
			got, total, _ := ix.rank(rankBudgetWords, top)
			want := all[:min(top, len(all))]
			if total != acts || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d top %d:\n got %v\nwant %v", seed, top, got, want)
			}
		}
	}
}
