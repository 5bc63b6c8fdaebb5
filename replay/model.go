package replay

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// kind is what a node is for replay.
type kind uint8

const (
	kindOther    kind = iota // relation nodes, plans, anything else: never removable
	kindActivity             // prov:Activity: an action of the run
	kindEntity               // prov:Entity: a datum (arguments, response, effect, message)
	kindAgent                // prov:Agent and its subclasses: never removable
)

func (k kind) String() string {
	switch k {
	case kindActivity:
		return "activity"
	case kindEntity:
		return "entity"
	case kindAgent:
		return "agent"
	}
	return "other"
}

// Removable reports whether a node of this kind may be named by --remove.
func (k kind) Removable() bool { return k == kindActivity || k == kindEntity }

// edge is a PROV dependency relation that replay follows.
type edge uint8

const (
	edgeUsed            edge = iota + 1 // Activity prov:used Entity: the activity depends on the entity
	edgeWasGeneratedBy                  // Entity prov:wasGeneratedBy Activity: the entity depends on the activity
	edgeWasInformedBy                   // Activity prov:wasInformedBy Activity: the informed activity depends on the informant
	edgeWasDerivedFrom                  // Entity prov:wasDerivedFrom Entity: the derived entity depends on its source
	edgeWasInfluencedBy                 // any prov:wasInfluencedBy any: the influenced node depends on the influencer (a result on the host's answer to a server request made during its call)

	// Ambiguous links: the node may depend on the object, or may not. They
	// are never followed; a counterfactual reports them (Result.Ambiguous).
	edgeDuringCandidate      // witness:duringCandidate: a server request made while several host requests were open → each of them
	edgePossiblyInfluencedBy // witness:possiblyInfluencedBy: a result of one of those candidates → the host's answer to that server request
)

// Name is the compact PROV name of the edge ("prov:used", ...).
func (e edge) Name() string {
	switch e {
	case edgeUsed:
		return "prov:used"
	case edgeWasGeneratedBy:
		return "prov:wasGeneratedBy"
	case edgeWasInformedBy:
		return "prov:wasInformedBy"
	case edgeWasDerivedFrom:
		return "prov:wasDerivedFrom"
	case edgeWasInfluencedBy:
		return "prov:wasInfluencedBy"
	case edgeDuringCandidate:
		return "witness:duringCandidate"
	case edgePossiblyInfluencedBy:
		return "witness:possiblyInfluencedBy"
	}
	return "edge?"
}

// dep is one dependency of a node: the node depends on On through Edge
// (the node is the subject of the PROV statement, On its object).
type dep struct {
	Edge edge
	On   string
}

// record is what replay needs to know about one graph node. Adapters (the
// graph.Graph adapter, tests, the bench generator) produce records; replay
// never reads a file format itself.
type record struct {
	ID   string
	Kind kind
	// Tool is the MCP tool of an activity (or of the call behind an effect).
	Tool string
	// Effect is set on an external-effect entity.
	Effect *effectFact
	// Destructive and NotIdempotent are the tool's explicit MCP annotations
	// (destructiveHint true, idempotentHint false) on an activity.
	Destructive   bool
	NotIdempotent bool
	// Deps are the node's outgoing dependency edges.
	Deps []dep
	// Maybe are the node's ambiguous links (EdgeDuringCandidate,
	// EdgePossiblyInfluencedBy): dependencies the evidence neither shows
	// nor rules out.
	Maybe []dep
}

// effectFact describes an external effect entity.
type effectFact struct {
	Op     string `json:"op"`
	Target string `json:"target,omitempty"`
}

// irreversibleOps are the effect ops whose effect cannot be undone.
var irreversibleOps = map[string]string{
	"delete":    "the effect deleted data; replay cannot re-create it",
	"overwrite": "the effect overwrote data; the previous content is not in the evidence",
	"send":      "the effect sent a message outside the run; it cannot be recalled",
	"payment":   "the effect made a payment; it cannot be reversed by replay",
}

// index is the compact form replay computes on: node ids sorted and numbered,
// dependents in CSR form (for node u, the nodes that depend on u).
type index struct {
	ids    []string // sorted
	recs   []nodeInfo
	depOff []int32 // len n+1
	dep    []int32 // dependents, sorted per node
	depVia []edge  // edge by which dep[i] depends on its owner
	// maybe lists the ambiguous links between nodes, by subject then edge
	// then object.
	maybe []maybeLink
	// relations are the relation nodes of an index read by
	// NewEngineJSONLD (see viewBuilder.relations), in node order; nil
	// for NewEngine, whose counterfactualGraph reads them from the graph.
	relations []int32
	// relRefOff and relRef are, when the builder kept them
	// (EngineBuilderOptions.Referrers), the nodes that refer to each
	// relation node: those of relations[r] are
	// relRef[relRefOff[r]:relRefOff[r+1]], sorted, each once. relRefOff
	// is nil when they were not kept.
	relRefOff []int32
	relRef    []int32
	// acts counts the activities of recs (Result.Graph.Actions), set
	// when the index is built.
	acts int
}

// nodeInfo is what the index keeps of a Record besides its id and
// dependencies: a third of a Record's size, a million times.
type nodeInfo struct {
	Tool          string
	Effect        *effectFact
	Kind          kind
	Destructive   bool
	NotIdempotent bool
}

// infoOf is r's nodeInfo.
func infoOf(r *record) nodeInfo {
	return nodeInfo{Tool: r.Tool, Effect: r.Effect, Kind: r.Kind, Destructive: r.Destructive, NotIdempotent: r.NotIdempotent}
}

// maybeLink is an ambiguous link: node from may depend on node on.
type maybeLink struct {
	from, on int32
	edge     edge
}

// lookup returns the index of the node id (binary search of the sorted
// ids: no map of a million strings to hold).
func (ix *index) lookup(id string) (int32, bool) {
	i, found := slices.BinarySearch(ix.ids, id)
	return int32(i), found
}

// buildIndex numbers the records by id. Duplicate ids are an error; edges to
// ids that are not nodes are ignored (a dangling reference depends on nothing
// replay can remove).
func buildIndex(recs []record) (*index, error) {
	sorted := recs
	if !sort.SliceIsSorted(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID }) {
		sorted = make([]record, len(recs))
		copy(sorted, recs)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	}
	n := len(sorted)
	ix := &index{ids: make([]string, n), recs: make([]nodeInfo, n)}
	pos := make(map[string]int32, n)
	for i := range sorted {
		r := &sorted[i]
		if i > 0 && sorted[i-1].ID == r.ID {
			return nil, fmt.Errorf("node %q appears twice", r.ID)
		}
		ix.ids[i] = r.ID
		ix.recs[i] = infoOf(r)
		pos[r.ID] = int32(i)
	}
	// Resolve every dependency target once (-1: not a node).
	total := 0
	for i := range sorted {
		total += len(sorted[i].Deps)
	}
	l := links{off: make([]int32, n+1), target: make([]int32, 0, total), edge: make([]edge, 0, total)}
	for i := range sorted {
		for _, d := range sorted[i].Deps {
			j, ok := pos[d.On]
			if !ok {
				j = -1
			}
			l.target = append(l.target, j)
			l.edge = append(l.edge, d.Edge)
		}
		l.off[i+1] = int32(len(l.target))
		for _, d := range sorted[i].Maybe {
			if j, ok := pos[d.On]; ok {
				l.maybe = append(l.maybe, maybeLink{from: int32(i), on: j, edge: d.Edge})
			}
		}
	}
	ix.link(l)
	ix.acts = countActivities(ix.recs)
	return ix, nil
}

// links are the resolved dependencies of the nodes of an index, in node
// order: node i depends on target[off[i]:off[i+1]] (-1: not a node)
// through edge[...]; maybe are its ambiguous links, in any order.
type links struct {
	off    []int32
	target []int32
	edge   []edge
	maybe  []maybeLink
}

// link fills the dependents (CSR, sorted, one edge per pair: the smallest),
// the not-replayable reasons and the ambiguous links of ix, whose ids and
// recs are set. A link of a node to itself is dropped.
func (ix *index) link(l links) {
	n := len(ix.ids)
	counts := make([]int32, n+1)
	for i := 0; i < n; i++ {
		for k := l.off[i]; k < l.off[i+1]; k++ {
			if j := l.target[k]; j == int32(i) {
				l.target[k] = -1
			} else if j >= 0 {
				counts[j+1]++
			}
		}
	}
	for i := 0; i < n; i++ {
		counts[i+1] += counts[i]
	}
	ix.depOff = counts
	ix.dep = make([]int32, counts[n])
	ix.depVia = make([]edge, counts[n])
	fill := make([]int32, n)
	copy(fill, counts[:n])
	for i := 0; i < n; i++ { // i ascending: each dependents list comes out sorted
		for k := l.off[i]; k < l.off[i+1]; k++ {
			j := l.target[k]
			if j < 0 {
				continue
			}
			ix.dep[fill[j]] = int32(i)
			ix.depVia[fill[j]] = l.edge[k]
			fill[j]++
		}
	}
	// Deduplicate (a node may depend on the same node through two edges);
	// keep the first edge in Edge order for explanations.
	w := int32(0)
	start := int32(0)
	for u := 0; u < n; u++ {
		end := ix.depOff[u+1]
		lo := w
		for k := start; k < end; k++ {
			if w > lo && ix.dep[w-1] == ix.dep[k] {
				if ix.depVia[k] < ix.depVia[w-1] {
					ix.depVia[w-1] = ix.depVia[k]
				}
				continue
			}
			ix.dep[w] = ix.dep[k]
			ix.depVia[w] = ix.depVia[k]
			w++
		}
		start = end
		ix.depOff[u+1] = w
	}
	ix.dep = ix.dep[:w]
	ix.depVia = ix.depVia[:w]
	for _, m := range l.maybe {
		if m.on != m.from {
			ix.maybe = append(ix.maybe, m)
		}
	}
	slices.SortFunc(ix.maybe, func(a, b maybeLink) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.edge, b.edge), cmp.Compare(a.on, b.on))
	})
	ix.maybe = slices.Compact(ix.maybe)
}

// notReplayable reports whether node i's effects cannot be undone: whether
// notReplayableReasons has reasons for it, without building them (a
// ranking asks it of every node; the reasons are a counterfactual's, for
// its members only).
func (ix *index) notReplayable(i int32) bool {
	r := &ix.recs[i]
	switch r.Kind {
	case kindEntity:
		if r.Effect != nil {
			_, ok := irreversibleOps[r.Effect.Op]
			return ok
		}
	case kindActivity:
		return r.Destructive || r.NotIdempotent
	}
	return false
}

// notReplayableReasons lists why the node's effects cannot be undone.
func notReplayableReasons(r *nodeInfo) []string {
	var out []string
	if r.Kind == kindEntity && r.Effect != nil {
		if why, ok := irreversibleOps[r.Effect.Op]; ok {
			out = append(out, "op "+r.Effect.Op+": "+why)
		}
	}
	if r.Kind == kindActivity {
		if r.Destructive {
			out = append(out, "tool "+quoteTool(r.Tool)+" is annotated destructiveHint: true")
		}
		if r.NotIdempotent {
			out = append(out, "tool "+quoteTool(r.Tool)+" is annotated idempotentHint: false; calling it again would not give the same state")
		}
	}
	return out
}

func quoteTool(t string) string {
	if t == "" {
		return "(unnamed)"
	}
	return t
}

func (ix *index) n() int { return len(ix.ids) }

func (ix *index) dependents(u int32) ([]int32, []edge) {
	a, b := ix.depOff[u], ix.depOff[u+1]
	return ix.dep[a:b], ix.depVia[a:b]
}
