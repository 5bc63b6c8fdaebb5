package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"slices"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// nameTable interns IRIs as numbers: their bytes in chunks of an arena
// (never copied as it grows) and an open-addressing hash table of their
// numbers, so that a million IRIs are a few pointer-free slices the
// collector never scans (a map of strings would be a million objects to
// allocate and to mark).
type nameTable struct {
	seed   maphash.Seed
	chunks [][]byte
	at     []uint64 // name k is chunks[at[k]>>32][at[k]&0xffffffff:][:size[k]]
	size   []uint32
	slots  []int32 // name number + 1, 0 for an empty slot
}

// nameChunk is the size of a chunk of the name arena.
const nameChunk = 1 << 20

func newNameTable(size int) *nameTable {
	t := &nameTable{seed: maphash.MakeSeed()}
	n := 16
	for n < size {
		n <<= 1
	}
	t.slots = make([]int32, n)
	return t
}

func (t *nameTable) len() int { return len(t.at) }

func (t *nameTable) bytes(k int32) []byte {
	a := t.at[k]
	off := uint32(a)
	return t.chunks[a>>32][off : off+t.size[k]]
}

// intern returns the number of name b, adding it when new.
func (t *nameTable) intern(b []byte) int32 {
	mask := uint64(len(t.slots) - 1)
	for h := maphash.Bytes(t.seed, b) & mask; ; h = (h + 1) & mask {
		s := t.slots[h]
		if s == 0 {
			k := int32(t.len())
			t.store(b)
			t.slots[h] = k + 1
			if 2*t.len() > len(t.slots) {
				t.grow()
			}
			return k
		}
		if string(t.bytes(s-1)) == string(b) {
			return s - 1
		}
	}
}

// store adds the bytes of a new name.
func (t *nameTable) store(b []byte) {
	last := len(t.chunks) - 1
	if last < 0 || cap(t.chunks[last])-len(t.chunks[last]) < len(b) {
		t.chunks = append(t.chunks, make([]byte, 0, max(nameChunk, len(b))))
		last++
	}
	c := t.chunks[last]
	t.at = growBy(t.at, 1)
	t.size = growBy(t.size, 1)
	t.at = append(t.at, uint64(last)<<32|uint64(len(c)))
	t.size = append(t.size, uint32(len(b)))
	t.chunks[last] = append(c, b...)
}

func (t *nameTable) grow() {
	t.slots = make([]int32, 2*len(t.slots))
	mask := uint64(len(t.slots) - 1)
	for k := int32(0); k < int32(t.len()); k++ {
		h := maphash.Bytes(t.seed, t.bytes(k)) & mask
		for t.slots[h] != 0 {
			h = (h + 1) & mask
		}
		t.slots[h] = k + 1
	}
}

// strings returns the names as strings, windows of one string per chunk.
func (t *nameTable) strings() []string {
	text := make([]string, len(t.chunks))
	for i, c := range t.chunks {
		text[i] = string(c)
	}
	out := make([]string, t.len())
	for k, a := range t.at {
		off := uint32(a)
		out[k] = text[a>>32][off : off+t.size[k]]
	}
	return out
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
	kind    []Kind
	tool    []string
	depOff  []int32 // deps of node i: depOn[depOff[i]:depOff[i+1]]
	depOn   []int32
	depEdge []Edge
	effects []effectOf
	maybe   []maybeLink // from: node, on: name number
	// defs are the tool definitions (name number of the definition).
	defs map[int32]toolFlags
	// tools interns the tool names (few distinct).
	tools map[string]string
	// events: the witness:eventId literals (node: document order).
	evText []byte
	events []eventRef
}

// effectOf is the effect of node (document order).
type effectOf struct {
	node int32
	fact EffectFact
}

// add keeps what replay needs of v: what recordBuilder.add keeps of the
// same node.
func (vb *viewBuilder) add(v *graph.NodeView) {
	i := int32(len(vb.node))
	vb.node = append(growBy(vb.node, 1), vb.names.intern(v.ID))
	kind := kindOfTypes(v.Types)
	vb.kind = append(growBy(vb.kind, 1), kind)
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
	effect := kind == KindEntity && v.HasType(graph.WExternalEffect)
	var fact EffectFact
	tool := ""
	for _, p := range v.Props {
		var edge Edge
		switch p.Pred {
		case graph.ProvUsed:
			edge = EdgeUsed
		case graph.ProvWasGeneratedBy:
			edge = EdgeWasGeneratedBy
		case graph.ProvWasInformedBy:
			edge = EdgeWasInformedBy
		case graph.ProvWasDerivedFrom:
			edge = EdgeWasDerivedFrom
		case graph.ProvWasInfluencedBy:
			edge = EdgeWasInfluencedBy
		case graph.WDuringCandidate, graph.WPossiblyInfluencedBy:
			e := EdgeDuringCandidate
			if p.Pred == graph.WPossiblyInfluencedBy {
				e = EdgePossiblyInfluencedBy
			}
			for _, t := range p.Vals {
				if len(t.IRI) > 0 {
					vb.maybe = append(vb.maybe, maybeLink{from: i, on: vb.names.intern(t.IRI), edge: e})
				}
			}
			continue
		case graph.OtelToolName:
			tool = vb.tool1(firstLiteralView(p.Vals))
			continue
		case graph.WEffectOp:
			if effect {
				fact.Op = string(firstLiteralView(p.Vals))
			}
			continue
		case graph.WEffectTarget:
			if effect {
				fact.Target = string(firstLiteralView(p.Vals))
			}
			continue
		case graph.WEventID:
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

// tool1 is the interned copy of a tool name.
func (vb *viewBuilder) tool1(b []byte) string {
	if s, ok := vb.tools[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(vb.tools) < 1<<16 {
		vb.tools[s] = s
	}
	return s
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
// error, as in buildIndex.
func (vb *viewBuilder) index() (*index, *eventTable, error) {
	n := len(vb.node)
	names := vb.names
	// order[k] is the document index of the k-th node by IRI
	order := make([]int32, n)
	sorted := true
	for i := range order {
		order[i] = int32(i)
		if i > 0 && string(names.bytes(vb.node[i-1])) >= string(names.bytes(vb.node[i])) {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(order, func(a, b int32) int {
			return bytes.Compare(names.bytes(vb.node[a]), names.bytes(vb.node[b]))
		})
	}
	// the IRIs as strings: ids are windows of one string per chunk
	all := names.strings()
	id := func(k int32) string { return all[k] }
	at := make([]int32, names.len()) // name number -> node index, -1: not a node
	for k := range at {
		at[k] = -1
	}
	ix := &index{ids: make([]string, n), recs: make([]nodeInfo, n)}
	for k, d := range order {
		ix.ids[k] = id(vb.node[d])
		if k > 0 && ix.ids[k-1] == ix.ids[k] {
			return nil, nil, fmt.Errorf("node %q appears twice", ix.ids[k])
		}
		at[vb.node[d]] = int32(k)
	}
	l := links{off: make([]int32, n+1), target: make([]int32, 0, len(vb.depOn)), edge: make([]Edge, 0, len(vb.depOn))}
	for k, d := range order {
		r := &ix.recs[k]
		r.Kind, r.Tool = vb.kind[d], vb.tool[d]
		from := int32(0)
		if d > 0 {
			from = vb.depOff[d-1]
		}
		for q := from; q < vb.depOff[d]; q++ {
			on, edge := vb.depOn[q], vb.depEdge[q]
			l.target = append(l.target, at[on])
			l.edge = append(l.edge, edge)
			// an activity has the hints of the tool definitions it used
			if f, ok := vb.defs[on]; ok && edge == EdgeUsed && r.Kind == KindActivity {
				r.Destructive = r.Destructive || f.destructive
				r.NotIdempotent = r.NotIdempotent || f.notIdempotent
			}
		}
		l.off[k+1] = int32(len(l.target))
	}
	rank := make([]int32, n) // document index -> node index
	for k, d := range order {
		rank[d] = int32(k)
	}
	for _, e := range vb.effects {
		ix.recs[rank[e.node]].Effect = &EffectFact{Op: e.fact.Op, Target: e.fact.Target}
	}
	for _, m := range vb.maybe {
		if j := at[m.on]; j >= 0 {
			l.maybe = append(l.maybe, maybeLink{from: rank[m.from], on: j, edge: m.edge})
		}
	}
	ix.link(l)
	ev := &eventTable{text: string(vb.evText), refs: vb.events}
	for i := range ev.refs {
		ev.refs[i].node = rank[ev.refs[i].node]
	}
	return ix, ev, nil
}

// NewEngineJSONLD reads a graph document (as graph.ReadJSONLD does, with
// its errors) straight into replay's index, node by node
// (graph.ScanJSONLDView), without holding the *graph.Graph or a *Node:
// the records, the dependency arrays and the event ids are all it keeps.
// Counterfactuals and rankings are those NewEngine gives for the same
// graph; what needs the graph itself (a Judge, verdict Sources, WriteDOT,
// CounterfactualGraph) is refused or nil.
func NewEngineJSONLD(r io.Reader, name string) (*Engine, error) {
	return newEngineJSONLD(r, name, 1<<16)
}

// newEngineJSONLD is NewEngineJSONLD with a name table of size slots at
// first.
func newEngineJSONLD(r io.Reader, name string, size int) (*Engine, error) {
	b := newEngineBuilder(size)
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
}

// NewEngineBuilder returns an empty EngineBuilder.
func NewEngineBuilder() *EngineBuilder {
	return newEngineBuilder(1 << 16)
}

func newEngineBuilder(size int) *EngineBuilder {
	return &EngineBuilder{vb: viewBuilder{names: newNameTable(size), depOff: make([]int32, 0, 1024), tools: map[string]string{}}}
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
			b.free <- &viewBatch{}
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
	for _, p := range v.Props {
		if !replayReads(p.Pred) {
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
	vb.buf = vb.buf[:0]
}

// replayReads reports whether viewBuilder.add reads the property pred.
func replayReads(pred string) bool {
	switch pred {
	case graph.WAnnotations, graph.ProvUsed, graph.ProvWasGeneratedBy, graph.ProvWasInformedBy,
		graph.ProvWasDerivedFrom, graph.ProvWasInfluencedBy, graph.WDuringCandidate, graph.WPossiblyInfluencedBy,
		graph.OtelToolName, graph.WEffectOp, graph.WEffectTarget, graph.WEventID:
		return true
	}
	return false
}

// kindOfTypes is kindOf for a node's types.
func kindOfTypes(types []string) Kind {
	var act, ent, agent bool
	for _, t := range types {
		switch t {
		case graph.WCaptureSession, graph.ProvPlan:
			return KindOther
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
		return KindActivity
	case agent:
		return KindAgent
	case ent:
		return KindEntity
	}
	return KindOther
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
