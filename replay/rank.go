package replay

import (
	"math/bits"
	"slices"
	"sort"
)

// weights are the three quantities a compensation set is measured by. A
// set counts each node of the index once, and an index numbers its nodes
// with int32: the counts fit (half the memory of int64, at a million
// components).
type weights struct {
	nodes      int32 // every node
	activities int32 // prov:Activity nodes
	notRep     int32 // nodes whose effects cannot be undone
}

func (w *weights) add(o weights) {
	w.nodes += o.nodes
	w.activities += o.activities
	w.notRep += o.notRep
}

// RankStats describes how a ranking was computed (see docs/replay.md).
type RankStats struct {
	Nodes      int `json:"nodes"`
	Edges      int `json:"edges"`
	Components int `json:"components"`      // strongly connected components of the dependents graph
	TreeComps  int `json:"tree_components"` // components whose dependents form an out-tree (summed in one pass)
	CoreComps  int `json:"core_components"` // the rest (shared descendants): bitset pass
	Relevant   int `json:"bitset_targets"`  // bitset columns: core components and the trees hanging off them
	ChunkBits  int `json:"chunk_bits"`      // columns per bitset chunk (bounds memory)
	Chunks     int `json:"chunks"`
	// Method is "tree" (no shared descendants), "tree+pruned-dfs" or
	// "tree+bitset" (see docs/replay.md).
	Method        string `json:"method"`
	Traversals    int    `json:"traversals"`     // pruned traversals run (tree+pruned-dfs)
	TraversalWork int64  `json:"traversal_work"` // component edges they visited
}

// sccs computes the strongly connected components of the dependents graph
// (iterative Tarjan, O(n + e)). Components are numbered in the order Tarjan
// closes them, which is a reverse topological order: if v depends on u and
// they are in different components, comp[u] > comp[v].
func (ix *index) sccs() (comp []int32, ncomp int32) {
	n := int32(ix.n())
	comp = make([]int32, n)
	idx := make([]int32, n) // 0 = unvisited, else discovery index + 1
	low := make([]int32, n)
	onStack := make([]bool, n)
	var stack []int32
	type frame struct{ u, k int32 }
	var call []frame
	next := int32(1)
	for i := range comp {
		comp[i] = -1
	}
	for root := int32(0); root < n; root++ {
		if idx[root] != 0 {
			continue
		}
		call = append(call, frame{root, ix.depOff[root]})
		idx[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			u := f.u
			if f.k < ix.depOff[u+1] {
				v := ix.dep[f.k]
				f.k++
				if idx[v] == 0 {
					idx[v], low[v] = next, next
					next++
					stack = append(stack, v)
					onStack[v] = true
					call = append(call, frame{v, ix.depOff[v]})
				} else if onStack[v] && idx[v] < low[u] {
					low[u] = idx[v]
				}
				continue
			}
			if low[u] == idx[u] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == u {
						break
					}
				}
				ncomp++
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].u
				if low[u] < low[p] {
					low[p] = low[u]
				}
			}
		}
	}
	return comp, ncomp
}

// rankBudgetWords bounds the bitset memory of a ranking (in 64-bit words).
const rankBudgetWords = 1 << 22 // 32 MiB

// reachAll returns, for every node, the weights of its compensation set
// when it alone is removed, without one traversal per node:
//
//  1. condense the dependents graph to its DAG of strongly connected
//     components (every member of a component has the same set);
//  2. in reverse topological order, a component whose children each have
//     exactly one parent and are themselves such "tree" components has an
//     out-tree below it, so its set size is its own weight plus its
//     children's: one pass, O(n + e);
//  3. the remaining "core" components (some descendant is reachable by two
//     paths) get exact sets as bitsets over the "relevant" columns (core
//     components and the tree components hanging off them, whose subtrees
//     are disjoint), computed chunk by chunk of at most ChunkBits columns in
//     topological order, so memory stays under rankBudgetWords words;
//     weighted popcounts use per-byte lookup tables.
func (ix *index) reachAll(budgetWords, dfsFactor int, onlyActivities bool) ([]weights, RankStats) {
	reach, comp, st := ix.reachComps(budgetWords, dfsFactor, onlyActivities)
	out := make([]weights, len(comp))
	for i, c := range comp {
		out[i] = reach[c]
	}
	return out, st
}

// reachComps is reachAll by strongly connected component: node i's weights
// are reach[comp[i]] (a ranking reads them for its activities only,
// without a per-node copy).
func (ix *index) reachComps(budgetWords, dfsFactor int, onlyActivities bool) (reach []weights, comp []int32, st RankStats) {
	n := ix.n()
	comp, nc := ix.sccs()
	st = RankStats{Nodes: n, Edges: len(ix.dep), Components: int(nc)}
	own := make([]weights, nc)
	for i := 0; i < n; i++ {
		c := comp[i]
		own[c].nodes++
		if ix.recs[i].Kind == kindActivity {
			own[c].activities++
		}
		if ix.notReplayable(int32(i)) {
			own[c].notRep++
		}
	}
	// Condensed edges, CSR by component, deduplicated.
	cnt := make([]int32, nc+1)
	for u := 0; u < n; u++ {
		for _, v := range ix.dep[ix.depOff[u]:ix.depOff[u+1]] {
			if comp[u] != comp[v] {
				cnt[comp[u]+1]++
			}
		}
	}
	for c := int32(0); c < nc; c++ {
		cnt[c+1] += cnt[c]
	}
	cdep := make([]int32, cnt[nc])
	fill := make([]int32, nc)
	copy(fill, cnt[:nc])
	for u := 0; u < n; u++ {
		for _, v := range ix.dep[ix.depOff[u]:ix.depOff[u+1]] {
			if comp[u] != comp[v] {
				cdep[fill[comp[u]]] = comp[v]
				fill[comp[u]]++
			}
		}
	}
	coff := make([]int32, nc+1)
	w := int32(0)
	for c := int32(0); c < nc; c++ {
		lst := cdep[cnt[c]:cnt[c+1]]
		slices.Sort(lst)
		coff[c] = w
		for k, x := range lst {
			if k > 0 && lst[k-1] == x {
				continue
			}
			cdep[w] = x
			w++
		}
	}
	coff[nc] = w
	cdep = cdep[:w]
	indeg := make([]int32, nc)
	for _, x := range cdep {
		indeg[x]++
	}
	// Tree components and their sums, children first (ascending index).
	tree := make([]bool, nc)
	reach = make([]weights, nc)
	for c := int32(0); c < nc; c++ {
		ok := true
		sum := own[c]
		for _, x := range cdep[coff[c]:coff[c+1]] {
			if indeg[x] != 1 || !tree[x] {
				ok = false
				break
			}
			sum.add(reach[x])
		}
		if ok {
			tree[c] = true
			reach[c] = sum
			st.TreeComps++
		}
	}
	st.CoreComps = int(nc) - st.TreeComps
	st.Method = "tree"
	if st.CoreComps > 0 {
		var need []bool
		if onlyActivities {
			need = make([]bool, nc)
			for i := 0; i < n; i++ {
				if ix.recs[i].Kind == kindActivity {
					need[comp[i]] = true
				}
			}
		}
		workBudget := int64(dfsFactor) * int64(n+len(ix.dep)+1)
		if ix.coreReachDFS(nc, tree, own, reach, coff, cdep, need, workBudget, &st) {
			st.Method = "tree+pruned-dfs"
		} else {
			st.Method = "tree+bitset"
			ix.coreReach(nc, tree, own, reach, coff, cdep, budgetWords, &st)
		}
	}
	return reach, comp, st
}

// dfsWorkFactor bounds the pruned traversals: they may visit at most
// dfsWorkFactor × (nodes + edges) component edges in total before the
// ranking falls back to the bitset pass.
const dfsWorkFactor = 16

// coreReachDFS fills reach for the core components marked in need (all when
// need is nil) with one traversal each that stops at tree components (whose
// subtree weights are known and whose subtrees are disjoint): on provenance
// graphs, where shared descendants are local, each traversal is short. It
// gives up, returning false, when the total work exceeds workBudget.
func (ix *index) coreReachDFS(nc int32, tree []bool, own, reach []weights, coff, cdep []int32, need []bool, workBudget int64, st *RankStats) bool {
	mark := make([]int32, nc)
	epoch := int32(0)
	var stack []int32
	var work int64
	for c := int32(0); c < nc; c++ {
		if tree[c] || need != nil && !need[c] {
			continue
		}
		epoch++
		mark[c] = epoch
		sum := own[c]
		stack = append(stack[:0], c)
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			kids := cdep[coff[u]:coff[u+1]]
			work += int64(len(kids)) + 1
			for _, x := range kids {
				if mark[x] == epoch {
					continue
				}
				mark[x] = epoch
				if tree[x] {
					sum.add(reach[x])
				} else {
					sum.add(own[x])
					stack = append(stack, x)
				}
			}
		}
		if work > workBudget {
			return false
		}
		reach[c] = sum
		st.Traversals++
	}
	st.TraversalWork = work
	return true
}

// coreReach fills reach for the core (non-tree) components with exact
// bitset reachability over the relevant columns.
func (ix *index) coreReach(nc int32, tree []bool, own, reach []weights, coff, cdep []int32, budgetWords int, st *RankStats) {
	// Relevant columns, ascending component index: core components and tree
	// components with a core parent.
	col := make([]int32, nc) // column of a relevant component, -1 otherwise
	for i := range col {
		col[i] = -1
	}
	hasCoreParent := make([]bool, nc)
	var core []int32
	for c := int32(0); c < nc; c++ {
		if !tree[c] {
			core = append(core, c)
			for _, x := range cdep[coff[c]:coff[c+1]] {
				hasCoreParent[x] = true
			}
		}
	}
	var rel []int32
	for c := int32(0); c < nc; c++ {
		if !tree[c] || hasCoreParent[c] {
			col[c] = int32(len(rel))
			rel = append(rel, c)
		}
	}
	st.Relevant = len(rel)
	colW := make([]weights, len(rel))
	for k, c := range rel {
		if tree[c] {
			colW[k] = reach[c]
		} else {
			colW[k] = own[c]
		}
	}
	coreRow := make([]int32, nc) // row of a core component in the bitset matrix
	for k, c := range core {
		coreRow[c] = int32(k)
	}
	words := (len(rel) + 63) / 64
	if budgetWords < 1 {
		budgetWords = 1
	}
	if lim := budgetWords / len(core); lim < words {
		words = lim
	}
	if words < 1 {
		words = 1
	}
	st.ChunkBits = words * 64
	matrix := make([]uint64, len(core)*words)
	acc := make([]weights, len(core))
	nbytes := words * 8
	table := make([]weights, nbytes*256)
	for lo := 0; lo < len(rel); lo += words * 64 {
		st.Chunks++
		hi := lo + words*64
		if hi > len(rel) {
			hi = len(rel)
		}
		// Per-byte lookup tables of the chunk's column weights.
		for p := 0; p < nbytes; p++ {
			t := table[p*256 : (p+1)*256]
			t[0] = weights{}
			for b := 1; b < 256; b++ {
				low := bits.TrailingZeros8(uint8(b))
				t[b] = t[b&(b-1)]
				if k := lo + p*8 + low; k < hi {
					t[b].add(colW[k])
				}
			}
		}
		loComp := rel[lo]
		// Core components below loComp cannot reach this chunk's columns.
		first := sort.Search(len(core), func(i int) bool { return core[i] >= loComp })
		for r := first; r < len(core); r++ {
			c := core[r]
			row := matrix[r*words : (r+1)*words]
			clear(row)
			if k := int(col[c]); k >= lo && k < hi {
				row[(k-lo)>>6] |= 1 << uint((k-lo)&63)
			}
			for _, x := range cdep[coff[c]:coff[c+1]] {
				if !tree[x] {
					if x < loComp {
						continue
					}
					xr := matrix[int(coreRow[x])*words : int(coreRow[x]+1)*words]
					for j := range row {
						row[j] |= xr[j]
					}
				} else if k := int(col[x]); k >= lo && k < hi {
					row[(k-lo)>>6] |= 1 << uint((k-lo)&63)
				}
			}
			var sum weights
			for j, wd := range row {
				for b := 0; wd != 0; b++ {
					if by := uint8(wd); by != 0 {
						sum.add(table[(j*8+b)*256+int(by)])
					}
					wd >>= 8
				}
			}
			acc[r].add(sum)
		}
	}
	for r, c := range core {
		reach[c] = acc[r]
	}
}

// RankEntry is the counterfactual of removing one activity alone.
type RankEntry struct {
	Rank                   int     `json:"rank"`
	Activity               string  `json:"activity"`
	Tool                   string  `json:"tool,omitempty"`
	CompensationSize       int64   `json:"compensation_size"`
	CompensationActivities int64   `json:"compensation_activities"`
	NotReplayable          int64   `json:"not_replayable"`
	SynergyResidual        float64 `json:"synergy_residual"`
}

// rank returns one counterfactual per activity, ranked by blast radius:
// compensation size (descending), then not-replayable nodes (descending),
// then activity id (ascending), and the number of activities. With top > 0
// it returns only the first top entries: a ranking is a total order (the
// activities' IRIs are distinct), so they are the full ranking's first
// top, selected without building and sorting an entry per activity.
func (ix *index) rank(budgetWords, top int) ([]RankEntry, int, RankStats) {
	reach, comp, st := ix.reachComps(budgetWords, dfsWorkFactor, true)
	w := func(i int32) *weights { return &reach[comp[i]] }
	// before reports whether activity a ranks before activity b.
	before := func(a, b int32) bool {
		wa, wb := w(a), w(b)
		if wa.nodes != wb.nodes {
			return wa.nodes > wb.nodes
		}
		if wa.notRep != wb.notRep {
			return wa.notRep > wb.notRep
		}
		return ix.ids[a] < ix.ids[b]
	}
	var acts int
	for i := range ix.recs {
		if ix.recs[i].Kind == kindActivity {
			acts++
		}
	}
	k := acts
	if top > 0 && top < acts {
		k = top
	}
	// sel holds the best k activities so far; with k < acts it is a heap
	// whose root is the last of them.
	sel := make([]int32, 0, k)
	down := func(p int) {
		for {
			worst, l := p, 2*p+1
			if l < len(sel) && before(sel[worst], sel[l]) {
				worst = l
			}
			if l+1 < len(sel) && before(sel[worst], sel[l+1]) {
				worst = l + 1
			}
			if worst == p {
				return
			}
			sel[p], sel[worst] = sel[worst], sel[p]
			p = worst
		}
	}
	for i := range ix.recs {
		if ix.recs[i].Kind != kindActivity {
			continue
		}
		a := int32(i)
		switch {
		case k == acts:
			sel = append(sel, a)
		case len(sel) < k:
			sel = append(sel, a)
			for c := len(sel) - 1; c > 0; {
				p := (c - 1) / 2
				if !before(sel[p], sel[c]) {
					break
				}
				sel[p], sel[c] = sel[c], sel[p]
				c = p
			}
		case before(a, sel[0]):
			sel[0] = a
			down(0)
		}
	}
	slices.SortFunc(sel, func(a, b int32) int {
		if a == b {
			return 0
		}
		if before(a, b) {
			return -1
		}
		return 1
	})
	out := make([]RankEntry, len(sel))
	for r, i := range sel {
		wi := w(i)
		out[r] = RankEntry{
			Rank:                   r + 1,
			Activity:               ix.ids[i],
			Tool:                   ix.recs[i].Tool,
			CompensationSize:       int64(wi.nodes),
			CompensationActivities: int64(wi.activities),
			NotReplayable:          int64(wi.notRep),
			SynergyResidual:        residual(int64(wi.activities), int64(acts)),
		}
	}
	return out, acts, st
}

// residual is the share removed/total rounded to 6 decimals (0 when total is
// 0), so that its decimal form is short and stable.
func residual(removed, total int64) float64 {
	if total == 0 {
		return 0
	}
	q := float64(removed) / float64(total)
	return float64(int64(q*1e6+0.5)) / 1e6
}
