package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
)

// This file is CheckGraph without the graph (docs/design/scale-history.md, "verify
// --graph"): one graph.ScanJSONLDView of the document projects each node
// at once into what checkGraph reads of it, from the view (no *graph.Node
// is built for a canonical element), copying only what it keeps. Kept: the
// node IRIs (one byte arena, sorted, since a canonical document's nodes
// come in IRI order), the event nodes' fields as eventsFromGraph reads
// them, the values of argument entities, the tool definitions, the
// references not yet checked (refCheck: nodes come in IRI order, so a
// reference is settled when the scan reaches or passes its target) and the
// graph digest (hashed on its own goroutine). The
// results are those of checkGraph on the graph ReadJSONLD would read;
// where the projection cannot say that (nodes out of order, a dangling
// reference, join statements, untrusted sources in the plan) the document
// is read again the old way. A projection Check judged alone also judges
// the document read without a set of its nodes (GraphScan.CheckWithout,
// replay --seal's counterfactual; scale-history.md, "Ninth round"): the events,
// tool definitions and sources keep their node, and judgeEvents reads
// them without the nodes dropped.

// errGraphReread ends a scan whose document the projection cannot judge
// as checkGraph would: the caller reads the document again, whole.
var errGraphReread = errors.New("graph needs the whole read")

// graphKinds are the event kinds of graphEvent.kind; 0 is a node with an
// event id but no event type (not an event).
var graphKinds = []eventlog.Kind{"", eventlog.KindSessionStart, eventlog.KindToolCall, eventlog.KindExternalEffect,
	eventlog.KindModelInput, eventlog.KindModelOutput, eventlog.KindNotification, eventlog.KindAmbiguous}

const (
	gkNone uint8 = iota
	gkSession
	gkCall
	gkEffect
	gkModelInput
	gkModelOutput
	gkNotification
	gkAmbiguous
)

// graphEvent is one event node, as eventsFromGraph reads it.
type graphEvent struct {
	seq     int64
	id      string
	a, b, c string   // call: tool, rpc id; effect: tool, op, target; message: role, -, payload; notification: method; ambiguous: -, -, payload; session: session, imported-from, bound seal
	refs    []string // call: prov:used; effect: prov:wasGeneratedBy; model message: prov:wasGeneratedBy, kept for CheckWithout only (graphScan.without)
	kind    uint8    // index in graphKinds
	effect  bool     // an effect with an op
	src     uint16   // index of its witness:source in graphScan.srcNames (while graphScan.manySrcs is unset)
	node    int32    // index of its node
}

// eventChunk is the number of graphEvents in one chunk: the records grow
// by chunks, never by a doubling copy.
const eventChunk = 1 << 12

// graphScan is the projection of a graph document.
type graphScan struct {
	ids    [][]byte // node IRIs, in order, in chunks of about idChunk bytes
	at     [][]idAt // where node i's IRI is in ids, in chunks of atChunk
	n      int      // nodes
	evOf   []int32  // node index → 1 + index of its event, 0 for a node without event id
	evs    [][]graphEvent
	nev    int
	legacy map[int32]string // event index → witness:legacySealRef
	args   map[int32]string // argument entity node → its valid JSON value
	tools  []eventlog.ToolDef
	toolAt []int32        // the node index of each of tools
	refs   refCheck       // the IRIs referenced, checked against the nodes' in sorted batches
	srcOf  map[string]int // witness:source → its index in srcNames
	// srcNames are the distinct witness:source values of the events, in
	// the order met, and srcN the number of events of each
	srcNames []string
	srcN     []int64
	// srcLimit is the number of distinct sources an event's src can
	// index (1<<16; tests make it small); manySrcs: more were met, so
	// the events' src are not all exact and CheckWithout cannot count
	// the sources of a counterfactual
	srcLimit int
	manySrcs bool
	names    map[string]string
	digest   *graph.NQuadsDigest // nil: no digest (GraphScanOptions.NoDigest)
	seqErr   error
	fields   nodeFields // the current node's (add)
	// without: the model messages keep their prov:wasGeneratedBy
	// references, which CheckWithout reads (GraphScanOptions.Without)
	without bool
	// judged: judge judged the events of the projection itself (no
	// reread, no graph-invalid finding): CheckWithout may judge it again
	judged bool
}

// newGraphScan returns an empty projection; digest: it hashes the
// canonical N-Quads of the nodes as they come (graphScan.digest).
func newGraphScan(digest bool) *graphScan {
	s := &graphScan{args: map[int32]string{}, legacy: map[int32]string{}, srcOf: map[string]int{},
		srcLimit: 1 << 16, names: map[string]string{}, refs: refCheck{batch: refBatch}}
	if digest {
		s.digest = graph.NewNQuadsDigest()
	}
	return s
}

// intern returns one shared copy of a short, repeated string.
func (s *graphScan) intern(b []byte) string {
	if w, ok := s.names[string(b)]; ok {
		return w
	}
	v := string(b)
	if len(s.names) < 1<<16 {
		s.names[v] = v
	}
	return v
}

// id returns node i's IRI.
func (s *graphScan) id(i int) []byte {
	a := s.at[i/atChunk][i%atChunk]
	return s.ids[a.chunk][a.off : a.off+a.len]
}

// idAt is where an IRI is in graphScan.ids.
type idAt struct{ chunk, off, len uint32 }

// idChunk is the size of one chunk of IRIs, atChunk the number of places
// in one chunk of graphScan.at: they grow by chunks, never by a doubling
// copy.
const (
	idChunk = 1 << 20
	atChunk = 1 << 14
)

// addID appends node IRI id.
func (s *graphScan) addID(id []byte) {
	if len(s.ids) == 0 || cap(s.ids[len(s.ids)-1])-len(s.ids[len(s.ids)-1]) < len(id) {
		s.ids = append(s.ids, make([]byte, 0, max(idChunk, len(id))))
	}
	c := len(s.ids) - 1
	if s.n%atChunk == 0 {
		s.at = append(s.at, make([]idAt, 0, atChunk))
	}
	s.at[len(s.at)-1] = append(s.at[len(s.at)-1], idAt{chunk: uint32(c), off: uint32(len(s.ids[c])), len: uint32(len(id))})
	s.n++
	s.ids[c] = append(s.ids[c], id...)
}

// ev returns event i.
func (s *graphScan) ev(i int) *graphEvent { return &s.evs[i/eventChunk][i%eventChunk] }

// find returns the index of the node with IRI iri among the first n of s,
// or -1.
func find[S string | []byte](s *graphScan, iri S, n int) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(s.id(m)) < string(iri) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < n && string(s.id(lo)) == string(iri) {
		return lo
	}
	return -1
}

// nodeFields are the first literals (nil: none) of the predicates add
// reads, and the values of the two it follows, in one view.
type nodeFields struct {
	join, value, toolName, defSHA, eventID, source, seq, session, imported, bound []byte
	rpcID, effectOp, effectTarget, role, method, legacy                           []byte
	used, generatedBy                                                             []graph.TermView
}

// fieldsOf reads the fields of v, as Node.Value and Node.Refs would.
func fieldsOf(f *nodeFields, v *graph.NodeView) {
	*f = nodeFields{}
	for _, p := range v.Props {
		var dst *[]byte
		switch p.Pred {
		case graph.ProvUsed:
			f.used = p.Vals
		case graph.ProvWasGeneratedBy:
			f.generatedBy = p.Vals
		case graph.WJoin:
			dst = &f.join
		case graph.ProvValue:
			dst = &f.value
		case graph.OtelToolName:
			dst = &f.toolName
		case graph.WDefinitionSHA256:
			dst = &f.defSHA
		case graph.WEventID:
			dst = &f.eventID
		case graph.WSource:
			dst = &f.source
		case graph.WSeq:
			dst = &f.seq
		case graph.WSession:
			dst = &f.session
		case graph.WImportedFrom:
			dst = &f.imported
		case graph.WBoundSeal:
			dst = &f.bound
		case graph.WRPCIDJSON:
			dst = &f.rpcID
		case graph.WEffectOp:
			dst = &f.effectOp
		case graph.WEffectTarget:
			dst = &f.effectTarget
		case graph.WRole:
			dst = &f.role
		case graph.OtelMCPMethodName:
			dst = &f.method
		case graph.WLegacySealRef:
			dst = &f.legacy
		}
		if dst == nil {
			continue
		}
		for _, t := range p.Vals {
			if len(t.IRI) == 0 {
				*dst = t.Lex
				break
			}
		}
	}
}

// refsOf is Node.Refs of the values vals, copied.
func refsOf(vals []graph.TermView) []string {
	var out []string
	for _, t := range vals {
		if len(t.IRI) > 0 {
			out = append(out, string(t.IRI))
		}
	}
	return out
}

// validJSON returns b as a string when it is valid, non-empty JSON, else "".
func validJSON(b []byte) string {
	if len(b) > 0 && json.Valid(b) {
		return string(b)
	}
	return ""
}

// add projects the node of view v, the next in IRI order. It keeps
// nothing of v's bytes: what it keeps, it copies.
func (s *graphScan) add(v *graph.NodeView) error {
	k := s.n
	if k > 0 && string(v.ID) <= string(s.id(k-1)) {
		return errGraphReread // out of order: ReadJSONLD sorts (or refuses a duplicate)
	}
	f := &s.fields
	fieldsOf(f, v)
	if len(f.join) > 0 {
		return errGraphReread // CheckRun's join check explains steps on the graph
	}
	if s.digest != nil {
		if err := s.digest.AddView(v); err != nil {
			return err
		}
	}
	// a reference pending to an IRI this node reaches is settled; one to
	// an IRI it passes is dangling
	if err := s.refs.reach(v.ID); err != nil {
		return err
	}
	s.addID(v.ID)
	s.evOf = append(s.evOf, 0)
	for _, p := range v.Props {
		for _, t := range p.Vals {
			if len(t.IRI) > 0 && !bytes.Equal(t.IRI, v.ID) {
				s.refs.add(t.IRI)
			}
		}
	}
	if s.refs.full() {
		if err := s.refs.sweep(s); err != nil {
			return err
		}
	}
	if v.HasType(graph.WArguments) {
		if j := validJSON(f.value); j != "" {
			s.args[int32(k)] = j
		}
	}
	if v.HasType(graph.WToolDefinition) {
		s.tools = append(s.tools, eventlog.ToolDef{Name: string(f.toolName), SHA256: string(f.defSHA)})
		s.toolAt = append(s.toolAt, int32(k))
	}
	if len(f.eventID) == 0 {
		return nil
	}
	src := s.source(f.source)
	seq, err := strconv.ParseInt(string(f.seq), 10, 64)
	if err != nil && s.seqErr == nil {
		s.seqErr = fmt.Errorf("node %s: field witness:seq: %q is not an integer", v.ID, f.seq)
	}
	e := graphEvent{seq: seq, id: string(f.eventID), src: uint16(src), node: int32(k)}
	switch {
	case v.HasType(graph.WCaptureSession):
		e.kind = gkSession
		e.a, e.b, e.c = string(f.session), string(f.imported), string(f.bound)
	case v.HasType(graph.WToolCall):
		e.kind = gkCall
		e.a = s.intern(f.toolName)
		e.b = validJSON(f.rpcID)
		e.refs = refsOf(f.used)
	case v.HasType(graph.WExternalEffect):
		e.kind = gkEffect
		e.a = s.intern(f.toolName)
		if len(f.effectOp) > 0 {
			e.effect, e.b, e.c = true, s.intern(f.effectOp), string(f.effectTarget)
		}
		e.refs = refsOf(f.generatedBy)
	case v.HasType(graph.WModelMessage):
		if slices.ContainsFunc(f.generatedBy, func(t graph.TermView) bool { return len(t.IRI) > 0 }) {
			e.kind = gkModelOutput
			if s.without {
				e.refs = refsOf(f.generatedBy)
			}
		} else {
			e.kind = gkModelInput
		}
		e.a = s.intern(f.role)
		e.c = validJSON(f.value)
	case v.HasType(graph.WNotification):
		e.kind = gkNotification
		e.a = s.intern(f.method)
	case v.HasType(graph.WAmbiguousLine):
		e.kind = gkAmbiguous
		e.c = validJSON(f.value)
	}
	if len(f.legacy) > 0 {
		s.legacy[int32(s.nev)] = string(f.legacy)
	}
	if s.nev%eventChunk == 0 {
		s.evs = append(s.evs, make([]graphEvent, 0, eventChunk))
	}
	s.evs[len(s.evs)-1] = append(s.evs[len(s.evs)-1], e)
	s.nev++
	s.evOf[k] = int32(s.nev)
	return nil
}

// source counts one more event of witness:source src and returns the
// index of src in srcNames.
func (s *graphScan) source(src []byte) int {
	i, ok := s.srcOf[string(src)]
	if !ok {
		i = len(s.srcNames)
		name := s.intern(src)
		s.srcOf[name] = i
		s.srcNames = append(s.srcNames, name)
		s.srcN = append(s.srcN, 0)
		if i >= s.srcLimit {
			s.manySrcs = true
		}
	}
	s.srcN[i]++
	return i
}

// nodeSet is a set of node indices of a graphScan, one bit each; the
// index -1 (find's "no node") is in none.
type nodeSet []uint64

// has reports whether node i is in the set; a nil set holds none.
func (d nodeSet) has(i int) bool { return d != nil && i >= 0 && d[i>>6]>>(i&63)&1 != 0 }

// gone returns the set of the nodes of s that drop names: with
// graph.ViewWithout, the nodes a reading of the document without them
// leaves out.
func (s *graphScan) gone(drop func(iri []byte) bool) (nodeSet, int) {
	d := make(nodeSet, (s.n+63)/64)
	n := 0
	for i := range s.n {
		if drop(s.id(i)) {
			d[i>>6] |= 1 << (i & 63)
			n++
		}
	}
	return d, n
}

// finish settles the references: any left is dangling.
func (s *graphScan) finish() error {
	if err := s.refs.sweep(s); err != nil {
		return err
	}
	if len(s.refs.runs) > 0 {
		return errGraphReread
	}
	return nil
}

// refCheck checks that every IRI a node references is some node's IRI
// (else the reference is dangling and the whole read lists it), exactly,
// without a set of strings: the nodes come in IRI order and their IRIs
// are kept sorted (graphScan.ids). The references are gathered as they
// come; a sweep, every refBatch of them, sorts them, drops repeats, looks
// each one at or before the last node's IRI up among the nodes (one pass
// of binary searches, each from the last one's place), and keeps the
// others, ahead of the scan, as a sorted run. Each node reaching the
// smallest pending IRI settles it in the runs it heads; a node passing a
// pending IRI makes it dangling. Runs are merged (repeats dropped) while
// one is no more than twice as long as the next, so there are few, and a
// pending IRI is held about once.
type refCheck struct {
	text []byte  // the references since the last sweep, one after another
	at   []refAt // where each is in text
	runs []*refRun
	min  []byte // the smallest head of the runs; nil without runs
	// batch is the number of references gathered between sweeps
	// (refBatch; tests make it small)
	batch int
	// recent holds IRIs gathered, one per slot of a cheap hash (the last
	// in it): a reference to one of them is checked already, by the one
	// gathered (a few IRIs, the agent, the server, the seal, are many of
	// the references)
	recent [256][]byte
}

// refAt is where a reference is in refCheck.text.
type refAt struct{ off, len uint32 }

// refRun is a sorted run of distinct pending IRIs; those before head are
// settled.
type refRun struct {
	text []byte
	ends []uint32
	head int
}

// refBatch is the number of references gathered between sweeps.
const refBatch = 1 << 13

func (r *refRun) at(k int) []byte {
	start := uint32(0)
	if k > 0 {
		start = r.ends[k-1]
	}
	return r.text[start:r.ends[k]]
}

func (r *refRun) push(iri []byte) {
	r.text = append(r.text, iri...)
	r.ends = append(r.ends, uint32(len(r.text)))
}

func (r *refRun) left() int { return len(r.ends) - r.head }

// add gathers the reference iri (not empty), unless it is in recent.
func (c *refCheck) add(iri []byte) {
	n := len(iri)
	r := &c.recent[(n*31+int(iri[n-1])*7+int(iri[n/2]))%len(c.recent)]
	if bytes.Equal(*r, iri) {
		return
	}
	*r = append((*r)[:0], iri...)
	c.at = append(c.at, refAt{off: uint32(len(c.text)), len: uint32(len(iri))})
	c.text = append(c.text, iri...)
}

func (c *refCheck) full() bool { return len(c.at) >= c.batch }

// reach settles the pending IRIs equal to the next node's, id, and
// refuses one it passes.
func (c *refCheck) reach(id []byte) error {
	if c.min == nil || bytes.Compare(id, c.min) < 0 {
		return nil
	}
	runs := c.runs[:0]
	for _, r := range c.runs {
		if r.head < len(r.ends) {
			switch bytes.Compare(r.at(r.head), id) {
			case -1:
				return errGraphReread // passed: dangling
			case 0:
				r.head++
			}
		}
		if r.left() > 0 {
			runs = append(runs, r)
		}
	}
	clear(c.runs[len(runs):])
	c.runs = runs
	c.setMin()
	return nil
}

func (c *refCheck) setMin() {
	c.min = nil
	for _, r := range c.runs {
		if h := r.at(r.head); c.min == nil || bytes.Compare(h, c.min) < 0 {
			c.min = h
		}
	}
}

func (c *refCheck) ref(a refAt) []byte { return c.text[a.off : a.off+a.len] }

// sweep settles the references gathered since the last sweep that are at
// or before the last node of s, and keeps the others as a run.
func (c *refCheck) sweep(s *graphScan) error {
	if len(c.at) == 0 {
		return nil
	}
	slices.SortFunc(c.at, func(a, b refAt) int { return bytes.Compare(c.ref(a), c.ref(b)) })
	n := s.n
	last := s.id(n - 1)
	run := &refRun{}
	lo := 0
	var prev []byte
	for k, a := range c.at {
		e := c.ref(a)
		if k > 0 && bytes.Equal(e, prev) {
			continue
		}
		prev = e
		if bytes.Compare(e, last) > 0 {
			run.push(e)
			continue
		}
		i := lowerBound(s, e, lo, n)
		if i == n || !bytes.Equal(s.id(i), e) {
			return errGraphReread // dangling
		}
		lo = i + 1
	}
	c.text, c.at = c.text[:0], c.at[:0]
	if len(run.ends) == 0 {
		return nil
	}
	c.runs = append(c.runs, run)
	for k := len(c.runs); k >= 2 && c.runs[k-2].left() <= 2*c.runs[k-1].left(); k-- {
		c.runs[k-2] = mergeRuns(c.runs[k-2], c.runs[k-1])
		c.runs[k-1] = nil
		c.runs = c.runs[:k-1]
	}
	c.setMin()
	return nil
}

// mergeRuns merges what is left of two runs, repeats dropped.
func mergeRuns(a, b *refRun) *refRun {
	m := &refRun{text: make([]byte, 0, len(a.text)+len(b.text)), ends: make([]uint32, 0, a.left()+b.left())}
	i, j := a.head, b.head
	for i < len(a.ends) || j < len(b.ends) {
		switch {
		case j == len(b.ends):
			m.push(a.at(i))
			i++
		case i == len(a.ends):
			m.push(b.at(j))
			j++
		default:
			x, y := a.at(i), b.at(j)
			switch bytes.Compare(x, y) {
			case -1:
				m.push(x)
				i++
			case 1:
				m.push(y)
				j++
			default:
				m.push(x)
				i, j = i+1, j+1
			}
		}
	}
	return m
}

// lowerBound returns the index of the first of the nodes lo..n-1 of s
// whose IRI is not below iri (n if none).
func lowerBound(s *graphScan, iri []byte, lo, n int) int {
	hi := n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(s.id(m), iri) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// event returns event i as eventsFromGraph builds it from the graph
// without the nodes in gone (graph.Without; nil: the graph itself). Its
// own node is not in gone; every reference of a node not in gone names
// a node of s (refCheck found none dangling): the references to nodes in
// gone are the ones graph.Without removes.
func (s *graphScan) event(i int, gone nodeSet) *eventlog.Event {
	n := s.n
	e := s.ev(i)
	kind := e.kind
	if kind == gkModelOutput && gone != nil && !slices.ContainsFunc(e.refs, func(c string) bool { return !gone.has(find(s, c, n)) }) {
		kind = gkModelInput // its every generator is gone
	}
	ev := &eventlog.Event{ID: e.id, Seq: e.seq, Kind: graphKinds[kind]}
	if l, ok := s.legacy[int32(i)]; ok {
		ev.Legacy = &eventlog.Legacy{SealRef: l}
	}
	switch kind {
	case gkModelInput, gkModelOutput, gkAmbiguous:
		if e.c != "" {
			ev.Payload = json.RawMessage(e.c)
		}
	}
	switch kind {
	case gkSession:
		h := &eventlog.Header{ImportedFrom: e.b}
		if e.c != "" {
			h.Seal = &eventlog.SealRef{Digest: e.c}
		}
		var tools []eventlog.ToolDef
		for k, td := range s.tools {
			if !gone.has(int(s.toolAt[k])) {
				tools = append(tools, td)
			}
		}
		if len(tools) > 0 {
			h.Server = &eventlog.ServerInfo{Tools: tools}
			sort.SliceStable(h.Server.Tools, func(i, j int) bool { return h.Server.Tools[i].Name < h.Server.Tools[j].Name })
		}
		ev.Header = h
	case gkCall:
		ev.Tool = e.a
		if e.b != "" {
			ev.RPCID = json.RawMessage(e.b)
		}
		for _, u := range e.refs {
			if i := find(s, u, n); i >= 0 && !gone.has(i) {
				if v, ok := s.args[int32(i)]; ok {
					ev.Payload = json.RawMessage(v)
				}
			}
		}
	case gkEffect:
		ev.Tool = e.a
		if e.effect {
			ev.Effect = &eventlog.Effect{Op: e.b, Target: e.c}
		}
		for _, c := range e.refs {
			i := find(s, c, n)
			if i >= 0 && gone.has(i) {
				continue // graph.Without removes the reference
			}
			ev.Call = ""
			if i >= 0 && s.evOf[i] > 0 {
				ev.Call = s.ev(int(s.evOf[i] - 1)).id
			}
		}
	case gkModelInput, gkModelOutput:
		ev.Role = e.a
	case gkNotification:
		ev.Method = e.a
	}
	return ev
}

// eventBatch is the number of events built ahead in one batch by
// eventsInOrder.
const eventBatch = 512

// eventsInOrder returns the function giving event order[k] (as event
// builds it without the nodes in gone) for k = 0, 1, 2...: another
// goroutine builds them, a batch ahead of the checker, which judges them
// meanwhile. That goroutine stops after the last event, or at its next
// batch once done is closed.
func (s *graphScan) eventsInOrder(order []int32, gone nodeSet, done <-chan struct{}) func(int) *eventlog.Event {
	ch := make(chan []*eventlog.Event, 4)
	go func() {
		defer close(ch)
		for at := 0; at < len(order); at += eventBatch {
			b := make([]*eventlog.Event, 0, eventBatch)
			for _, i := range order[at:min(at+eventBatch, len(order))] {
				b = append(b, s.event(int(i), gone))
			}
			select {
			case ch <- b:
			case <-done:
				return
			}
		}
	}()
	var cur []*eventlog.Event
	next := 0
	return func(k int) *eventlog.Event {
		if k != next { // not in order (judgeGraphEvents takes them in order): built here
			return s.event(int(order[k]), gone)
		}
		next++
		if len(cur) == 0 {
			cur = <-ch
		}
		e := cur[0]
		cur = cur[1:]
		return e
	}
}

// checkGraphStream is checkGraph on the document in rd, scanned, without
// the nodes drop names and every reference to them when drop is set
// (graph.ViewWithout: the scan sees the nodes graph.Without would keep).
// It returns errGraphReread, having changed nothing in r, when the
// document must be read whole (checkGraph); any other error is the read's.
func checkGraphStream(r *Report, plan Plan, name string, rd io.Reader, drop func(iri []byte) bool) error {
	if len(plan.Untrusted) > 0 {
		return errGraphReread // injection-provenance walks the graph
	}
	s := newGraphScan(drop == nil) // a graph without nodes has no digest (CheckGraphWithout)
	add := s.add
	if drop != nil {
		var w graph.ViewWithout
		add = func(v *graph.NodeView) error {
			if v = w.Apply(v, drop); v == nil {
				return nil
			}
			return s.add(v)
		}
	}
	return s.judge(r, plan, name, graph.ScanJSONLDView(rd, name, add))
}

// GraphScan is CheckGraph for a caller that scans the graph document
// itself (graph.ScanJSONLDView), so that one parse of the document feeds
// verify and the caller's own use of it (replay's engine, for `replay
// --graph G --seal S`): Add every node, in document order, then Check (or
// Discard), and, made with GraphScanOptions.Without, CheckWithout.
type GraphScan struct {
	s        *graphScan // nil when the plan needs the whole read, or once Check finds it of no more use
	err      error      // the first error of Add; Add stops there, as a scan would
	done     bool
	noDigest bool
}

// GraphScanOptions say what a GraphScan leaves out.
type GraphScanOptions struct {
	// NoDigest leaves Evidence.GraphDigest empty: the canonical N-Quads
	// of the graph are not hashed. The digest is evidence only, never a
	// finding, so a caller that reads the verdict and the findings alone
	// (replay's drift overlay) saves its cost.
	NoDigest bool
	// Without keeps, after Check, what CheckWithout needs to judge the
	// document again without a set of its nodes: the projection itself
	// (held until the GraphScan is dropped) and, in it, the
	// prov:wasGeneratedBy references of the model messages, which say
	// whether a message is still a model output once nodes are dropped.
	// replay --seal judges its counterfactual from it without reading the
	// graph file again (docs/design/scale-history.md, "Ninth round").
	Without bool
}

// NewGraphScan returns an empty GraphScan judging against plan.
func NewGraphScan(plan Plan, o GraphScanOptions) *GraphScan {
	if len(plan.Untrusted) > 0 {
		return &GraphScan{noDigest: o.NoDigest} // injection-provenance walks the graph
	}
	s := newGraphScan(!o.NoDigest)
	s.without = o.Without
	return &GraphScan{s: s, noDigest: o.NoDigest}
}

// Add projects the node v (valid only during the call).
func (g *GraphScan) Add(v *graph.NodeView) {
	if g.s == nil || g.err != nil {
		return
	}
	g.err = g.s.add(v)
}

// Check adds to r the findings CheckGraph adds for the document scanned,
// which the caller's scan read whole (without error). When the scan
// cannot judge it as the whole read would, reopen gives the document
// again (and a function closing it), and it is read whole.
func (g *GraphScan) Check(r *Report, plan Plan, name string, reopen func() (io.Reader, func(), error)) error {
	graphEvidence(r, name)
	err := errGraphReread
	if g.s != nil {
		g.done = true
		err = g.s.judge(r, plan, name, g.err)
		if !g.s.judged || !g.s.without {
			g.s = nil // CheckWithout cannot judge from it: let it go
		}
	}
	if errors.Is(err, errGraphReread) {
		rd, closeFn, err := reopen()
		if err != nil {
			return fmt.Errorf("graph %s: read again: %w", name, err)
		}
		defer closeFn()
		return checkGraphWhole(r, plan, name, rd, nil, !g.noDigest)
	}
	return err
}

// CheckWithout adds to r what CheckGraphWithout(r, plan, name, rd, drop)
// adds for the document the GraphScan was fed (rd reading it), without
// reading it: from the projection Check judged, with the nodes drop
// names and every reference to them left out (graph.Without). It returns
// true when it did; false, with r unchanged, when the projection cannot
// say it, and the caller reads the document (CheckGraphWithout). It can
// when the GraphScan was made with GraphScanOptions.Without and Check
// judged the document from its projection alone: every node, in IRI
// order, without join statement, dangling reference or seq that is no
// integer (then the graph without any set of its nodes is so too: a kept
// node's references name kept nodes, its literals and types are
// untouched), for a plan without untrusted sources (injection-provenance
// walks the graph), drop set (drop nil is CheckGraph, which records the
// digest), and with no more distinct witness:source values than an
// event's index of its source holds (1<<16). Concurrent calls are safe;
// none may run with Add or Check.
func (g *GraphScan) CheckWithout(r *Report, plan Plan, name string, drop func(iri []byte) bool) bool {
	s := g.s
	if s == nil || !s.judged || !s.without || s.manySrcs || drop == nil || len(plan.Untrusted) > 0 {
		return false
	}
	gone, dropped := s.gone(drop)
	graphEvidence(r, name)
	r.Evidence.Lines = int64(s.n - dropped)
	s.judgeEvents(r, plan, name, gone)
	return true
}

// Discard ends a GraphScan that is not checked (the caller's scan
// failed).
func (g *GraphScan) Discard() {
	if g.s != nil && !g.done {
		g.done = true
		g.s.closeDigest()
	}
}

// closeDigest stops the digest's hashing, if any.
func (s *graphScan) closeDigest() {
	if s.digest != nil {
		s.digest.Close()
	}
}

// judge is checkGraphStream after the scan, whose error is err.
func (s *graphScan) judge(r *Report, plan Plan, name string, err error) error {
	if err == nil {
		err = s.finish()
	}
	if err != nil {
		s.closeDigest()
		if errors.Is(err, errGraphReread) {
			return err
		}
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-invalid", Severity: SevError, Class: classTampered, File: name,
			Message: err.Error(),
		})
		return nil
	}
	if s.digest != nil {
		digest, err := s.digest.Sum()
		if err != nil {
			return fmt.Errorf("graph %s: canonical n-quads: %w", name, err)
		}
		r.Evidence.GraphDigest = digest
	}
	s.digest, s.refs = nil, refCheck{}
	r.Evidence.Lines = int64(s.n)
	if s.seqErr != nil {
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-invalid", Severity: SevError, Class: classTampered, File: name,
			Message: fmt.Sprintf("graph %s: %v", name, s.seqErr),
		})
		return nil
	}
	s.judged = true
	s.judgeEvents(r, plan, name, nil)
	return nil
}

// judgeEvents is the judgement of the events of the graph without the
// nodes in gone (nil: the graph itself), once the scan found the
// document whole, in order, without join statement, dangling reference or
// seq that is no integer: the one path of the observed judgement (judge)
// and the counterfactual one (GraphScan.CheckWithout).
func (s *graphScan) judgeEvents(r *Report, plan Plan, name string, gone nodeSet) {
	order := make([]int32, 0, s.nev)
	counts := s.srcN
	if gone != nil {
		counts = make([]int64, len(s.srcNames))
	}
	session := ""
	for i := 0; i < s.nev; i++ {
		e := s.ev(i)
		if gone != nil {
			if gone.has(int(e.node)) {
				continue
			}
			counts[e.src]++
		}
		if e.kind == gkNone {
			continue
		}
		if e.kind == gkSession {
			session = e.a
		}
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := s.ev(int(a)).seq, s.ev(int(b)).seq
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	r.Evidence.Session = session
	for k, src := range s.srcNames {
		if src != "" && counts[k] > 0 {
			r.Evidence.addSource(src)
			r.Evidence.Sources[src] += counts[k] - 1
		}
	}
	r.Evidence.finishProvenance()
	done := make(chan struct{})
	defer close(done)
	judgeGraphEvents(r, plan, name, len(order), s.eventsInOrder(order, gone, done))
	// CheckRun on a graph without join statements, with no untrusted
	// source in the plan, judges nothing; it marks what it ran.
	if r.ran == nil {
		r.ran = map[string]bool{}
	}
	if plan.Untrusted != nil {
		r.ran[CheckInjection] = true
	}
}
