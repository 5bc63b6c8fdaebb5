package replay

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// nameTable interns IRIs as numbers: their bytes in chunks of an arena
// and an open-addressing hash table of their numbers, so that a million
// IRIs are a few pointer-free slices and strings the collector never
// scans (a map of strings would be a million objects to allocate and to
// mark). A chunk is filled as bytes, then sealed as one string when the
// next name does not fit, and its buffer reused: the copy happens while
// the names are still coming in, the names are never held twice, and at
// the end every name is a window of a sealed string.
type nameTable struct {
	seed   maphash.Seed
	sealed []string // full chunks
	cur    []byte   // the chunk being filled, number len(sealed)
	at     []uint64 // name k is chunk at[k]>>32, from offset at[k]&0xffffffff, size[k] bytes
	size   []uint32
	// slots: 0 for an empty slot, else the low 32 bits of the name's hash
	// (above) and its number + 1 (below): a probe compares hashes before
	// it reads a name, and growing rehashes from the slots alone.
	slots []uint64
}

// nameChunk is the size of a chunk of the name arena.
const nameChunk = 1 << 20

func newNameTable(size int) *nameTable {
	t := &nameTable{seed: maphash.MakeSeed()}
	n := 16
	for n < size {
		n <<= 1
	}
	t.slots = make([]uint64, n)
	return t
}

func (t *nameTable) len() int { return len(t.at) }

// is reports whether name k is b.
func (t *nameTable) is(k int32, b []byte) bool {
	a := t.at[k]
	c, off := int(a>>32), uint32(a)
	if c < len(t.sealed) {
		return t.sealed[c][off:off+t.size[k]] == string(b)
	}
	return string(t.cur[off:off+t.size[k]]) == string(b)
}

// intern returns the number of name b, adding it when new.
func (t *nameTable) intern(b []byte) int32 {
	h := uint32(maphash.Bytes(t.seed, b))
	mask := uint32(len(t.slots) - 1) // fewer than 1<<32 slots: names are int32
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			k := int32(t.len())
			t.store(b)
			t.slots[i] = uint64(h)<<32 | uint64(k+1)
			if 2*t.len() > len(t.slots) {
				t.grow()
			}
			return k
		}
		if k := int32(uint32(s)) - 1; uint32(s>>32) == h && t.is(k, b) {
			return k
		}
	}
}

// store adds the bytes of a new name.
func (t *nameTable) store(b []byte) {
	if cap(t.cur)-len(t.cur) < len(b) {
		t.seal()
		if cap(t.cur) < len(b) {
			t.cur = make([]byte, 0, max(nameChunk, len(b)))
		}
	}
	t.at = growBy(t.at, 1)
	t.size = growBy(t.size, 1)
	t.at = append(t.at, uint64(len(t.sealed))<<32|uint64(len(t.cur)))
	t.size = append(t.size, uint32(len(b)))
	t.cur = append(t.cur, b...)
}

// seal ends the chunk being filled (if it holds any name): it becomes a
// string and its buffer is reused for the next.
func (t *nameTable) seal() {
	if len(t.cur) > 0 {
		t.sealed = append(t.sealed, string(t.cur))
		t.cur = t.cur[:0]
	}
}

func (t *nameTable) grow() {
	old := t.slots
	t.slots = make([]uint64, 2*len(old))
	mask := uint32(len(t.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := uint32(s>>32) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// done seals the last chunk and drops the hash table: no name is added
// after, and every name is a string window (name).
func (t *nameTable) done() {
	t.seal()
	t.cur = nil
	t.slots = nil
}

// name is name k, a window of a sealed chunk; the table must be done.
func (t *nameTable) name(k int32) string {
	a := t.at[k]
	off := uint32(a)
	return t.sealed[a>>32][off : off+t.size[k]]
}

// growBy makes room for n more elements in s, doubling its capacity when
// it must grow (append grows large slices by a quarter: many more copies).
func growBy[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	c := make([]T, len(s), 2*cap(s)+n+64)
	copy(c, s)
	return c
}

// eventTable is the witness:eventId literals of the nodes of an engine
// read without its graph: their bytes in one string, pointer-free.
type eventTable struct {
	text string
	refs []eventRef
}

// eventRef is one witness:eventId literal: text[start:end], of node.
type eventRef struct {
	start, end uint32
	node       int32
}

// find returns the nodes that have the event id q.
func (t *eventTable) find(q string) []int32 {
	if t == nil {
		return nil
	}
	var hits []int32
	for _, r := range t.refs {
		if t.text[r.start:r.end] == q {
			hits = append(hits, r.node)
		}
	}
	return hits
}

// viewBuilder keeps what replay needs of each node a scan gives, in
// document order, with every IRI as a number of its name table.
type viewBuilder struct {
	names *nameTable
	// per node, in document order
	node    []int32 // name number of the node's IRI
	kind    []kind
	tool    []int32 // number of the node's tool name in toolName (0: none)
	depOff  []int32 // deps of node i: depOn[depOff[i]:depOff[i+1]]
	depOn   []int32
	depEdge []edge
	effects []effectOf
	maybe   []maybeLink // from: node, on: name number
	// defs are the tool definitions (name number of the definition).
	defs map[int32]toolFlags
	// tools interns the tool names (few distinct) as numbers of toolName,
	// whose first is "" (no tool): a number per node, not a string header
	// the collector would scan.
	tools    map[string]int32
	toolName []string
	// events: the witness:eventId literals (node: document order).
	evText []byte
	events []eventRef
	// workers is the number of goroutines of index's per-node passes
	// (0: see parallel); tests set it.
	workers int
	// relations are the relation nodes (document order): neither
	// activity, entity nor agent, nor the capture session or the seal
	// (counterfactualGraph drops one that only removed nodes refer to).
	relations []int32
	// refs is set when the builder keeps who refers to the relation nodes
	// (EngineBuilderOptions.Referrers). The IRI values add keeps anyway
	// (depOn, maybe) are resolved at index time; the others are the pairs
	// refFrom (document index of the node) and refOn (name number of the
	// value), except a value naming a node already added that is not a
	// relation node (plain, by name number): it cannot matter.
	refs    bool
	refFrom []int32
	refOn   []int32
	plain   []bool
}

// effectOf is the effect of node (document order).
type effectOf struct {
	node int32
	fact effectFact
}

// add keeps what replay needs of v: what recordBuilder.add keeps of the
// same node.
func (vb *viewBuilder) add(v *graph.NodeView) {
	i := int32(len(vb.node))
	vb.node = append(growBy(vb.node, 1), vb.names.intern(v.ID))
	kind := kindOfTypes(v.Types)
	vb.kind = append(growBy(vb.kind, 1), kind)
	if kind == kindOther && !v.HasType(graph.WCaptureSession) && !v.HasType(graph.ProvPlan) {
		vb.relations = append(vb.relations, i)
	} else if vb.refs {
		vb.markPlain(vb.node[i])
	}
	if v.HasType(graph.WToolDefinition) {
		var f toolFlags
		for _, p := range v.Props {
			if p.Pred == graph.WAnnotations {
				f = toolFlagsOf(firstLiteralView(p.Vals))
			}
		}
		if vb.defs == nil {
			vb.defs = map[int32]toolFlags{}
		}
		vb.defs[vb.node[i]] = f
	}
	effect := kind == kindEntity && v.HasType(graph.WExternalEffect)
	var fact effectFact
	tool := int32(0)
	for _, p := range v.Props {
		use, edge := predUse(p.Pred)
		if vb.refs && use != useDep && use != useMaybe {
			vb.refer(i, p.Vals)
		}
		switch use {
		case useDep: // kept after the switch
		case useMaybe:
			for _, t := range p.Vals {
				if len(t.IRI) > 0 {
					vb.maybe = append(vb.maybe, maybeLink{from: i, on: vb.names.intern(t.IRI), edge: edge})
				}
			}
			continue
		case useTool:
			tool = vb.tool1(firstLiteralView(p.Vals))
			continue
		case useEffectOp:
			if effect {
				fact.Op = string(firstLiteralView(p.Vals))
			}
			continue
		case useEffectTarget:
			if effect {
				fact.Target = string(firstLiteralView(p.Vals))
			}
			continue
		case useEventID:
			for _, t := range p.Vals {
				if len(t.IRI) == 0 {
					start := uint32(len(vb.evText))
					vb.evText = append(growBy(vb.evText, len(t.Lex)), t.Lex...)
					vb.events = append(growBy(vb.events, 1), eventRef{start: start, end: uint32(len(vb.evText)), node: i})
				}
			}
			continue
		default:
			continue
		}
		for _, t := range p.Vals {
			if len(t.IRI) > 0 {
				vb.depOn = append(growBy(vb.depOn, 1), vb.names.intern(t.IRI))
				vb.depEdge = append(growBy(vb.depEdge, 1), edge)
			}
		}
	}
	vb.tool = append(growBy(vb.tool, 1), tool)
	vb.depOff = append(growBy(vb.depOff, 1), int32(len(vb.depOn)))
	if effect {
		vb.effects = append(vb.effects, effectOf{node: i, fact: fact})
	}
}

// markPlain notes that name k is the IRI of a node that is not a
// relation node.
func (vb *viewBuilder) markPlain(k int32) {
	if n := vb.names.len(); len(vb.plain) < n {
		old := len(vb.plain)
		vb.plain = growBy(vb.plain, n-old)[:n]
		clear(vb.plain[old:])
	}
	vb.plain[k] = true
}

// refer keeps the IRI values of vals, of the node at document index from,
// that may name a relation node (refs).
func (vb *viewBuilder) refer(from int32, vals []graph.TermView) {
	for _, t := range vals {
		if len(t.IRI) == 0 {
			continue
		}
		k := vb.names.intern(t.IRI)
		if int(k) < len(vb.plain) && vb.plain[k] {
			continue
		}
		vb.refFrom = append(growBy(vb.refFrom, 1), from)
		vb.refOn = append(growBy(vb.refOn, 1), k)
	}
}

// tool1 is the number in toolName of a tool name, interned (up to 1<<16
// distinct names; past them a name gets a number of its own each time).
func (vb *viewBuilder) tool1(b []byte) int32 {
	if len(b) == 0 {
		return 0
	}
	if k, ok := vb.tools[string(b)]; ok {
		return k
	}
	if len(vb.toolName) == 0 {
		vb.toolName = append(vb.toolName, "")
	}
	k := int32(len(vb.toolName))
	s := string(b)
	vb.toolName = append(vb.toolName, s)
	if len(vb.tools) < 1<<16 {
		vb.tools[s] = k
	}
	return k
}

// firstLiteralView is firstLiteral of a view's values.
func firstLiteralView(vals []graph.TermView) []byte {
	for _, t := range vals {
		if len(t.IRI) == 0 {
			return t.Lex
		}
	}
	return nil
}

// index numbers the nodes by IRI (the document's order when it is sorted,
// as witness writes it) and builds replay's index. A repeated IRI is an
// error, as in buildIndex. The per-node passes run on GOMAXPROCS
// goroutines over disjoint ranges of nodes (parallel): each writes its
// own elements only, so the index is the same whatever the split.
func (vb *viewBuilder) index() (*index, *eventTable, error) {
	n := len(vb.node)
	names := vb.names
	names.done()
	name := func(d int32) string { return names.name(vb.node[d]) }
	// order[k] is the document index of the k-th node by IRI; nil when the
	// document is sorted (strictly: no IRI twice), then it is k itself
	var order []int32
	for i := 1; i < n; i++ {
		if name(int32(i-1)) >= name(int32(i)) {
			order = make([]int32, n)
			for k := range order {
				order[k] = int32(k)
			}
			slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(name(a), name(b)) })
			for k := 1; k < n; k++ {
				if id := name(order[k]); id == name(order[k-1]) {
					return nil, nil, fmt.Errorf("node %q appears twice", id)
				}
			}
			break
		}
	}
	doc := func(k int) int32 {
		if order == nil {
			return int32(k)
		}
		return order[k]
	}
	// rank[d] is the node index of document index d (nil: d itself)
	var rank []int32
	if order != nil {
		rank = make([]int32, n)
		for k, d := range order {
			rank[d] = int32(k)
		}
	}
	nodeOf := func(d int32) int32 {
		if rank == nil {
			return d
		}
		return rank[d]
	}
	at := make([]int32, names.len()) // name number -> node index, -1: not a node
	vb.parallel(len(at), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			at[k] = -1
		}
	})
	ix := &index{ids: make([]string, n), recs: make([]nodeInfo, n)}
	vb.parallel(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			d := doc(k)
			ix.ids[k] = name(d)
			at[vb.node[d]] = int32(k)
		}
	})
	// the links of node k are l.target[l.off[k]:l.off[k+1]]: in a sorted
	// document, the dependency arrays themselves, resolved in place
	l := links{off: make([]int32, n+1)}
	if order == nil {
		copy(l.off[1:], vb.depOff)
		l.target, l.edge = vb.depOn, vb.depEdge
	} else {
		for k, d := range order {
			l.off[k+1] = l.off[k] + vb.depOff[d] - depFrom(vb.depOff, d)
		}
		l.target, l.edge = make([]int32, len(vb.depOn)), make([]edge, len(vb.depOn))
	}
	vb.parallel(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			d := doc(k)
			r := &ix.recs[k]
			r.Kind = vb.kind[d]
			if t := vb.tool[d]; t > 0 {
				r.Tool = vb.toolName[t]
			}
			w := l.off[k]
			for q := depFrom(vb.depOff, d); q < vb.depOff[d]; q++ {
				on, edge := vb.depOn[q], vb.depEdge[q]
				l.target[w], l.edge[w] = at[on], edge
				w++
				// an activity has the hints of the tool definitions it used
				if f, ok := vb.defs[on]; ok && edge == edgeUsed && r.Kind == kindActivity {
					r.Destructive = r.Destructive || f.destructive
					r.NotIdempotent = r.NotIdempotent || f.notIdempotent
				}
			}
		}
	})
	for i := range vb.effects {
		e := &vb.effects[i]
		ix.recs[nodeOf(e.node)].Effect = &e.fact
	}
	for _, m := range vb.maybe {
		if j := at[m.on]; j >= 0 {
			l.maybe = append(l.maybe, maybeLink{from: nodeOf(m.from), on: j, edge: m.edge})
		}
	}
	for _, d := range vb.relations {
		ix.relations = append(ix.relations, nodeOf(d))
	}
	slices.Sort(ix.relations)
	if vb.refs {
		// before link, which drops a node's links to itself
		vb.referrers(ix, at, nodeOf, &l)
	}
	ix.link(l)
	ev := &eventTable{text: string(vb.evText), refs: vb.events}
	for i := range ev.refs {
		ev.refs[i].node = nodeOf(ev.refs[i].node)
	}
	ix.acts = countActivities(ix.recs)
	return ix, ev, nil
}

// referrers fills ix.relRefOff and ix.relRef: for each relation node
// (ix.relations, sorted), the nodes whose IRI values name it, by any
// predicate, sorted and each once. The values are the dependencies (l,
// resolved, node order), the ambiguous links (vb.maybe) and the pairs
// refer kept; at maps a name number to its node (-1: none), nodeOf a
// document index to its node.
func (vb *viewBuilder) referrers(ix *index, at []int32, nodeOf func(int32) int32, l *links) {
	n := len(ix.ids)
	// rank of a relation node among ix.relations: a bit per node and the
	// count of the words before
	rel := make([]uint64, (n+63)/64)
	for _, i := range ix.relations {
		rel[i>>6] |= 1 << (i & 63)
	}
	before := make([]int32, len(rel)+1)
	for w, b := range rel {
		before[w+1] = before[w] + int32(bits.OnesCount64(b))
	}
	each := func(f func(r, from int32)) {
		to := func(j, from int32) {
			if j < 0 {
				return
			}
			w, b := j>>6, uint64(1)<<(j&63)
			if rel[w]&b != 0 {
				f(before[w]+int32(bits.OnesCount64(rel[w]&(b-1))), from)
			}
		}
		for k := int32(0); k < int32(n); k++ {
			for q := l.off[k]; q < l.off[k+1]; q++ {
				to(l.target[q], k)
			}
		}
		for _, m := range vb.maybe {
			to(at[m.on], nodeOf(m.from))
		}
		for q, on := range vb.refOn {
			to(at[on], nodeOf(vb.refFrom[q]))
		}
	}
	off := make([]int32, len(ix.relations)+1)
	each(func(r, _ int32) { off[r+1]++ })
	for r := range len(ix.relations) {
		off[r+1] += off[r]
	}
	refs := make([]int32, off[len(ix.relations)])
	fill := slices.Clone(off[:len(ix.relations)])
	each(func(r, from int32) {
		refs[fill[r]] = from
		fill[r]++
	})
	// sort and deduplicate each list, compacting in place
	w := int32(0)
	for r := range len(ix.relations) {
		seg := refs[off[r]:off[r+1]]
		slices.Sort(seg)
		off[r] = w
		prev := int32(-1)
		for _, from := range seg {
			if from != prev {
				refs[w] = from
				w++
				prev = from
			}
		}
	}
	off[len(ix.relations)] = w
	ix.relRefOff, ix.relRef = off, refs[:w:w]
}

// depFrom is where the dependencies of document node d start in depOn
// (depOff[d] is where they end).
func depFrom(depOff []int32, d int32) int32 {
	if d == 0 {
		return 0
	}
	return depOff[d-1]
}

// minParallel is the fewest elements a goroutine of parallel gets.
const minParallel = 1 << 14

// parallel calls f on consecutive ranges [lo, hi) covering [0, n), on
// GOMAXPROCS goroutines of their own with at least minParallel elements
// each (vb.workers of them when set, however few the elements), and
// returns when all are done; f must only write elements of its own range.
func (vb *viewBuilder) parallel(n int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/minParallel)
	if vb.workers > 0 {
		w = min(vb.workers, n)
	}
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range w {
		lo, hi := n*i/w, n*(i+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// NewEngineJSONLD reads a graph document (as graph.ReadJSONLD does, with
// its errors) straight into replay's index, node by node
// (graph.ScanJSONLDView), without holding the *graph.Graph or a *Node:
// the records, the dependency arrays and the event ids are all it keeps.
// Counterfactuals and rankings are those NewEngine gives for the same
// graph; what needs the graph itself (a Judge, verdict Sources, WriteDOT,
// CounterfactualGraph) is refused or nil.
func NewEngineJSONLD(r io.Reader, name string) (*Engine, error) {
	return newEngineJSONLD(r, name, 1<<16, engineBuilderOptions{})
}

// newEngineJSONLD is NewEngineJSONLD with a name table of size slots at
// first and the builder's options o.
func newEngineJSONLD(r io.Reader, name string, size int, o engineBuilderOptions) (*Engine, error) {
	b := newEngineBuilder(size, o)
	err := graph.ScanJSONLDView(r, name, func(v *graph.NodeView) error {
		b.Add(v)
		return nil
	})
	if err != nil {
		b.Discard()
		return nil, err
	}
	return b.Finish()
}

// EngineBuilder builds the engine NewEngineJSONLD reads from the nodes of
// a graph document a caller scans itself (graph.ScanJSONLDView), so that
// one parse of the document feeds replay and the caller's own use of it.
// Add every node of the document, in document order, then Finish (or
// Discard, when the scan failed). The engine is NewEngineJSONLD's of the
// same document.
//
// Add only copies what replay reads of a node into a batch; a goroutine
// of the builder interns the batches' IRIs and keeps the nodes, in the
// order they were added, so that this work runs beside the caller's scan
// instead of on it (docs/design/scale.md).
type EngineBuilder struct {
	vb   viewBuilder
	cur  *viewBatch
	work chan *viewBatch // full batches, in order, to the worker
	free chan *viewBatch // batches the worker is done with
	done chan struct{}   // closed when the worker has added every batch
}

// batchNodes is the number of nodes in a batch of an EngineBuilder;
// batchesInFlight is how many batches there are at most.
const (
	batchNodes      = 1024
	batchesInFlight = 4
)

// viewBatch holds copies of nodes: each view's slices point into the
// batch's own arrays (appended to only, so earlier views stay valid when
// they grow), reused once the worker has added them.
type viewBatch struct {
	views []graph.NodeView
	types []string
	props []graph.PropView
	terms []graph.TermView
	buf   []byte
	// refs: the builder keeps referrers (EngineBuilderOptions); the IRI
	// values of the properties replay does not read are copied into
	// others, as one more property of the node, its predicate "" (read
	// by no one, its values kept by viewBuilder.refer).
	refs   bool
	others []graph.TermView
}

// engineBuilderOptions are the choices of an EngineBuilder.
type engineBuilderOptions struct {
	// Referrers keeps, for each relation node, the nodes that refer to
	// it, so that a counterfactual judged on the document (DocumentJudge)
	// finds the relation nodes it drops without reading the document
	// again (docs/design/scale-history.md, "replay --seal"). It costs the
	// interning of more IRI values during the scan: set it only when a
	// judge will be used.
	Referrers bool
}

// NewEngineBuilder returns an empty EngineBuilder with no options.
func NewEngineBuilder() *EngineBuilder {
	return newEngineBuilder(1<<16, engineBuilderOptions{})
}

// newEngineBuilderWith returns an empty EngineBuilder with options o.
func newEngineBuilderWith(o engineBuilderOptions) *EngineBuilder {
	return newEngineBuilder(1<<16, o)
}

func newEngineBuilder(size int, o engineBuilderOptions) *EngineBuilder {
	return &EngineBuilder{vb: viewBuilder{names: newNameTable(size), depOff: make([]int32, 0, 1024), tools: map[string]int32{}, refs: o.Referrers}}
}

// Add keeps what replay needs of the node v (valid only during the call,
// as ScanJSONLDView gives it).
func (b *EngineBuilder) Add(v *graph.NodeView) {
	if b.cur == nil {
		b.cur = b.batch()
	}
	b.cur.add(v)
	if len(b.cur.views) == batchNodes {
		b.work <- b.cur
		b.cur = nil
	}
}

// batch returns an empty batch, starting the worker at the first one.
func (b *EngineBuilder) batch() *viewBatch {
	if b.work == nil {
		b.work = make(chan *viewBatch, batchesInFlight)
		b.free = make(chan *viewBatch, batchesInFlight)
		b.done = make(chan struct{})
		for range batchesInFlight {
			b.free <- &viewBatch{refs: b.vb.refs}
		}
		go func() {
			defer close(b.done)
			for vb := range b.work {
				for i := range vb.views {
					b.vb.add(&vb.views[i])
				}
				vb.reset()
				b.free <- vb
			}
		}()
	}
	return <-b.free
}

// wait hands on the last batch and waits until the worker has added it.
func (b *EngineBuilder) wait() {
	if b.work == nil {
		return
	}
	if b.cur != nil && len(b.cur.views) > 0 {
		b.work <- b.cur
	}
	b.cur = nil
	close(b.work)
	<-b.done
	b.work = nil
}

// Finish indexes the nodes added and returns the engine; a repeated node
// IRI is a tampered graph, as in NewEngineJSONLD. The builder is not used
// after.
func (b *EngineBuilder) Finish() (*Engine, error) {
	b.wait()
	ix, ev, err := b.vb.index()
	b.vb = viewBuilder{}
	if err != nil {
		return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("index graph: %w", err), "")
	}
	return &Engine{ix: ix, events: ev}, nil
}

// Discard ends a builder whose engine is not wanted (its scan failed):
// its goroutine ends. The builder is not used after.
func (b *EngineBuilder) Discard() {
	b.wait()
	b.vb = viewBuilder{}
}

// add appends a copy of what viewBuilder.add reads of v: its IRI, types
// and the properties add reads, with their values, in v's order.
func (vb *viewBatch) add(v *graph.NodeView) {
	p0 := len(vb.props)
	o0 := len(vb.others)
	for _, p := range v.Props {
		if !replayReads(p.Pred) {
			if vb.refs {
				for _, t := range p.Vals {
					if len(t.IRI) > 0 {
						vb.others = append(vb.others, graph.TermView{IRI: vb.bytes(t.IRI)})
					}
				}
			}
			continue
		}
		t0 := len(vb.terms)
		for _, t := range p.Vals {
			var c graph.TermView
			c.Datatype = t.Datatype
			if len(t.IRI) > 0 {
				c.IRI = vb.bytes(t.IRI)
			}
			if len(t.Lex) > 0 {
				c.Lex = vb.bytes(t.Lex)
			}
			vb.terms = append(vb.terms, c)
		}
		vb.props = append(vb.props, graph.PropView{Pred: p.Pred, Vals: vb.terms[t0:len(vb.terms):len(vb.terms)]})
	}
	if len(vb.others) > o0 {
		vb.props = append(vb.props, graph.PropView{Vals: vb.others[o0:len(vb.others):len(vb.others)]})
	}
	ty0 := len(vb.types)
	vb.types = append(vb.types, v.Types...)
	vb.views = append(vb.views, graph.NodeView{
		ID:    vb.bytes(v.ID),
		Types: vb.types[ty0:len(vb.types):len(vb.types)],
		Props: vb.props[p0:len(vb.props):len(vb.props)],
	})
}

// bytes returns a copy of b in the batch's buffer.
func (vb *viewBatch) bytes(b []byte) []byte {
	n := len(vb.buf)
	vb.buf = append(vb.buf, b...)
	return vb.buf[n:len(vb.buf):len(vb.buf)]
}

// reset empties the batch, keeping its arrays (nothing of the previous
// nodes is kept: viewBuilder.add copies what it keeps).
func (vb *viewBatch) reset() {
	clear(vb.views)
	vb.views = vb.views[:0]
	vb.types = vb.types[:0]
	clear(vb.props)
	vb.props = vb.props[:0]
	clear(vb.terms)
	vb.terms = vb.terms[:0]
	clear(vb.others)
	vb.others = vb.others[:0]
	vb.buf = vb.buf[:0]
}

// predUse is what replay reads of a property: how it uses the predicate
// and, for a dependency or an ambiguous link, its edge. It is the one
// mapping from graph predicates to replay for both paths (viewBuilder.add
// on the stream, recordBuilder.add on a *graph.Graph); a switch, so the
// stream's hot path neither allocates nor hashes.
func predUse(pred string) (propUse, edge) {
	switch pred {
	case graph.ProvUsed:
		return useDep, edgeUsed
	case graph.ProvWasGeneratedBy:
		return useDep, edgeWasGeneratedBy
	case graph.ProvWasInformedBy:
		return useDep, edgeWasInformedBy
	case graph.ProvWasDerivedFrom:
		return useDep, edgeWasDerivedFrom
	case graph.ProvWasInfluencedBy:
		return useDep, edgeWasInfluencedBy
	case graph.WDuringCandidate:
		return useMaybe, edgeDuringCandidate
	case graph.WPossiblyInfluencedBy:
		return useMaybe, edgePossiblyInfluencedBy
	case graph.OtelToolName:
		return useTool, 0
	case graph.WEffectOp:
		return useEffectOp, 0
	case graph.WEffectTarget:
		return useEffectTarget, 0
	case graph.WEventID:
		return useEventID, 0
	case graph.WAnnotations:
		return useAnnotations, 0
	}
	return useNone, 0
}

// propUse is how replay uses a property (predUse).
type propUse uint8

const (
	useNone         propUse = iota // not read
	useDep                         // its IRI values are dependencies (the edge)
	useMaybe                       // its IRI values are ambiguous links (the edge)
	useTool                        // its first literal is the tool name
	useEffectOp                    // its first literal is an external effect's operation
	useEffectTarget                // its first literal is an external effect's target
	useEventID                     // its literals are the node's event ids
	useAnnotations                 // its first literal is a tool definition's annotations
)

// replayReads reports whether viewBuilder.add reads the property pred.
func replayReads(pred string) bool {
	use, _ := predUse(pred)
	return use != useNone
}

// kindOfTypes is kindOf for a node's types.
func kindOfTypes(types []string) kind {
	var act, ent, agent bool
	for _, t := range types {
		switch t {
		case graph.WCaptureSession, graph.ProvPlan:
			return kindOther
		case graph.ProvActivity:
			act = true
		case graph.ProvEntity:
			ent = true
		case graph.ProvAgent, graph.ProvSoftwareAgent:
			agent = true
		}
	}
	switch {
	case act:
		return kindActivity
	case agent:
		return kindAgent
	case ent:
		return kindEntity
	}
	return kindOther
}

// toolFlagsOf reads a tool definition's witness:annotations (the canonical
// JSON of its MCP annotations). MCP: destructiveHint and idempotentHint
// are meaningful only when readOnlyHint is false; a read-only tool changes
// nothing, whatever the other hints say.
func toolFlagsOf(raw []byte) toolFlags {
	var f toolFlags
	var h toolHints
	if len(raw) > 0 && json.Unmarshal(raw, &h) == nil && (h.ReadOnly == nil || !*h.ReadOnly) {
		f.destructive = h.Destructive != nil && *h.Destructive
		f.notIdempotent = h.Idempotent != nil && !*h.Idempotent
	}
	return f
}
