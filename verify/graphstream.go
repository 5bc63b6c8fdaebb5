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

// This file is CheckGraph without the graph (docs/design/scale.md, "verify
// --graph"): one graph.ScanJSONLD of the document projects each node at
// once into what checkGraph reads of it, and drops the node. Kept: the
// node IRIs (one byte arena, sorted, since a canonical document's nodes
// come in IRI order), the event nodes' fields as eventsFromGraph reads
// them, the values of argument entities, the tool definitions, the
// references not yet checkable (to IRIs after the current one) and the
// graph digest's running hash. The results are those of checkGraph on
// the graph ReadJSONLD would read; where the projection cannot say that
// (nodes out of order, join statements, untrusted sources in the plan)
// the document is read again the old way.

// errGraphReread ends a scan whose document the projection cannot judge
// as checkGraph would: the caller reads the document again, whole.
var errGraphReread = errors.New("graph needs the whole read")

// graphEvent is one event node, as eventsFromGraph reads it.
type graphEvent struct {
	seq     int64
	id      string
	kind    eventlog.Kind // "" for an event node of no event type (not an event)
	a, b, c string        // call: tool, rpc id; effect: tool, op, target; message: role; notification: method; session: session, imported-from, bound seal
	legacy  string
	payload string   // message, ambiguous line: its valid JSON value
	refs    []string // call: prov:used; effect: prov:wasGeneratedBy
	effect  bool
}

// laterRef is a reference to an IRI after its node's, checked at the end.
type laterRef struct {
	off, n int    // target in graphScan.later
	node   int32  // index of the node holding it
	pred   string // interned
	seq    int    // position among the references, for the findings' order
}

// graphScan is the projection of a graph document.
type graphScan struct {
	ids    []byte  // node IRIs, in order
	offs   []int   // ids[offs[i]:offs[i+1]] is node i's IRI
	evOf   []int32 // node index → 1 + index in evs, 0 for a node without event id
	evs    []graphEvent
	args   map[int32]string // argument entity node → its valid JSON value
	tools  []eventlog.ToolDef
	later  []byte
	refs   []laterRef
	dangl  []danglingAt
	nref   int
	srcs   map[string]int64
	names  map[string]string
	digest *graph.NQuadsDigest
	seqErr error
}

// danglingAt is a dangling reference with its position among references.
type danglingAt struct {
	dangling
	seq int
}

func newGraphScan() *graphScan {
	return &graphScan{args: map[int32]string{}, srcs: map[string]int64{}, names: map[string]string{}, digest: graph.NewNQuadsDigest(), offs: []int{0}}
}

// intern returns one shared copy of a short, repeated string.
func (s *graphScan) intern(v string) string {
	if w, ok := s.names[v]; ok {
		return w
	}
	if len(s.names) < 1<<16 {
		s.names[v] = v
	}
	return v
}

// id returns node i's IRI.
func (s *graphScan) id(i int) []byte { return s.ids[s.offs[i]:s.offs[i+1]] }

// find returns the index of the node with IRI iri among the first n, or -1.
func (s *graphScan) find(iri []byte, n int) int {
	i := sort.Search(n, func(i int) bool { return bytes.Compare(s.id(i), iri) >= 0 })
	if i < n && bytes.Equal(s.id(i), iri) {
		return i
	}
	return -1
}

// add projects node n, the next in IRI order.
func (s *graphScan) add(n *graph.Node) error {
	k := len(s.offs) - 1
	if k > 0 && n.ID <= string(s.id(k-1)) {
		return errGraphReread // out of order: ReadJSONLD sorts (or refuses a duplicate)
	}
	if n.Value(graph.WJoin) != "" {
		return errGraphReread // CheckRun's join check explains steps on the graph
	}
	if err := s.digest.Add(n); err != nil {
		return err
	}
	s.ids = append(s.ids, n.ID...)
	s.offs = append(s.offs, len(s.ids))
	s.evOf = append(s.evOf, 0)
	eventID := n.Value(graph.WEventID)
	for _, p := range n.Predicates() {
		for _, t := range n.Props[p] {
			if !t.IsIRI() {
				continue
			}
			s.nref++
			switch {
			case t.IRI == n.ID:
			case t.IRI < n.ID:
				if s.find([]byte(t.IRI), k) < 0 {
					s.dangl = append(s.dangl, danglingAt{dangling{node: n.ID, pred: p, target: t.IRI, eventID: eventID}, s.nref})
				}
			default:
				off := len(s.later)
				s.later = append(s.later, t.IRI...)
				s.refs = append(s.refs, laterRef{off: off, n: len(t.IRI), node: int32(k), pred: s.intern(p), seq: s.nref})
			}
		}
	}
	if n.HasType(graph.WArguments) {
		if v := n.Value(graph.ProvValue); v != "" && json.Valid([]byte(v)) {
			s.args[int32(k)] = v
		}
	}
	if n.HasType(graph.WToolDefinition) {
		s.tools = append(s.tools, eventlog.ToolDef{Name: n.Value(graph.OtelToolName), SHA256: n.Value(graph.WDefinitionSHA256)})
	}
	if eventID == "" {
		return nil
	}
	s.srcs[s.intern(n.Value(graph.WSource))]++
	seq, err := strconv.ParseInt(n.Value(graph.WSeq), 10, 64)
	if err != nil && s.seqErr == nil {
		s.seqErr = fmt.Errorf("node %s: field witness:seq: %q is not an integer", n.ID, n.Value(graph.WSeq))
	}
	e := graphEvent{seq: seq, id: eventID, legacy: n.Value(graph.WLegacySealRef)}
	payload := func() {
		if v := n.Value(graph.ProvValue); v != "" && json.Valid([]byte(v)) {
			e.payload = v
		}
	}
	switch {
	case n.HasType(graph.WCaptureSession):
		e.kind = eventlog.KindSessionStart
		e.a, e.b, e.c = n.Value(graph.WSession), n.Value(graph.WImportedFrom), n.Value(graph.WBoundSeal)
	case n.HasType(graph.WToolCall):
		e.kind = eventlog.KindToolCall
		e.a = s.intern(n.Value(graph.OtelToolName))
		if rid := n.Value(graph.WRPCIDJSON); rid != "" && json.Valid([]byte(rid)) {
			e.b = rid
		}
		e.refs = n.Refs(graph.ProvUsed)
	case n.HasType(graph.WExternalEffect):
		e.kind = eventlog.KindExternalEffect
		e.a = s.intern(n.Value(graph.OtelToolName))
		if op := n.Value(graph.WEffectOp); op != "" {
			e.effect, e.b, e.c = true, s.intern(op), n.Value(graph.WEffectTarget)
		}
		e.refs = n.Refs(graph.ProvWasGeneratedBy)
	case n.HasType(graph.WModelMessage):
		if len(n.Refs(graph.ProvWasGeneratedBy)) > 0 {
			e.kind = eventlog.KindModelOutput
		} else {
			e.kind = eventlog.KindModelInput
		}
		e.a = s.intern(n.Value(graph.WRole))
		payload()
	case n.HasType(graph.WNotification):
		e.kind = eventlog.KindNotification
		e.a = s.intern(n.Value(graph.OtelMCPMethodName))
	case n.HasType(graph.WAmbiguousLine):
		e.kind = eventlog.KindAmbiguous
		payload()
	}
	s.evs = append(s.evs, e)
	s.evOf[k] = int32(len(s.evs))
	return nil
}

// danglingRefs returns what danglingRefs returns for the graph read.
func (s *graphScan) danglingRefs() []dangling {
	n := len(s.offs) - 1
	all := s.dangl
	for _, r := range s.refs {
		t := s.later[r.off : r.off+r.n]
		if s.find(t, n) >= 0 {
			continue
		}
		ev := ""
		if e := s.evOf[r.node]; e > 0 {
			ev = s.evs[e-1].id
		}
		all = append(all, danglingAt{dangling{node: string(s.id(int(r.node))), pred: r.pred, target: string(t), eventID: ev}, r.seq})
	}
	slices.SortFunc(all, func(a, b danglingAt) int { return a.seq - b.seq })
	out := make([]dangling, len(all))
	for i, d := range all {
		out[i] = d.dangling
	}
	return out
}

// event returns the event of e as eventsFromGraph builds it.
func (s *graphScan) event(e *graphEvent) *eventlog.Event {
	n := len(s.offs) - 1
	ev := &eventlog.Event{ID: e.id, Seq: e.seq, Kind: e.kind}
	if e.legacy != "" {
		ev.Legacy = &eventlog.Legacy{SealRef: e.legacy}
	}
	if e.payload != "" {
		ev.Payload = json.RawMessage(e.payload)
	}
	switch e.kind {
	case eventlog.KindSessionStart:
		h := &eventlog.Header{ImportedFrom: e.b}
		if e.c != "" {
			h.Seal = &eventlog.SealRef{Digest: e.c}
		}
		if len(s.tools) > 0 {
			h.Server = &eventlog.ServerInfo{Tools: slices.Clone(s.tools)}
			sort.SliceStable(h.Server.Tools, func(i, j int) bool { return h.Server.Tools[i].Name < h.Server.Tools[j].Name })
		}
		ev.Header = h
	case eventlog.KindToolCall:
		ev.Tool = e.a
		if e.b != "" {
			ev.RPCID = json.RawMessage(e.b)
		}
		for _, u := range e.refs {
			if i := s.find([]byte(u), n); i >= 0 {
				if v, ok := s.args[int32(i)]; ok {
					ev.Payload = json.RawMessage(v)
				}
			}
		}
	case eventlog.KindExternalEffect:
		ev.Tool = e.a
		if e.effect {
			ev.Effect = &eventlog.Effect{Op: e.b, Target: e.c}
		}
		for _, c := range e.refs {
			ev.Call = ""
			if i := s.find([]byte(c), n); i >= 0 && s.evOf[i] > 0 {
				ev.Call = s.evs[s.evOf[i]-1].id
			}
		}
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		ev.Role = e.a
	case eventlog.KindNotification:
		ev.Method = e.a
	}
	return ev
}

// checkGraphStream is checkGraph on the document in rd, scanned. It
// returns errGraphReread, having changed nothing in r, when the document
// must be read whole (checkGraph); any other error is the read's.
func checkGraphStream(r *Report, plan Plan, name string, rd io.Reader) error {
	if len(plan.Untrusted) > 0 {
		return errGraphReread // injection-provenance walks the graph
	}
	s := newGraphScan()
	if err := graph.ScanJSONLD(rd, name, s.add); err != nil {
		if errors.Is(err, errGraphReread) {
			return err
		}
		r.Findings = append(r.Findings, Finding{
			Check: CheckChain, Code: "graph-invalid", Severity: SevError, Class: ClassTampered, File: name,
			Message: err.Error(),
		})
		return nil
	}
	digest, err := s.digest.Sum()
	if err != nil {
		return fmt.Errorf("graph %s: canonical n-quads: %w", name, err)
	}
	s.digest = nil
	r.Evidence.GraphDigest = digest
	r.Evidence.Lines = int64(len(s.offs) - 1)
	dangling := s.danglingRefs()
	s.later, s.refs, s.dangl = nil, nil, nil
	for i, d := range dangling {
		if i == maxDanglingFindings {
			r.Findings = append(r.Findings, Finding{
				Check: CheckChain, Code: "findings-dropped", Severity: SevNotice, Class: ClassNotice, File: name,
				Message: fmt.Sprintf("%d more graph-dangling findings were not listed", len(dangling)-i),
			})
			break
		}
		r.Findings = append(r.Findings, Finding{
			Check: CheckChain, Code: "graph-dangling", Severity: SevError, Class: ClassTampered, File: name,
			EventID: d.eventID,
			Message: fmt.Sprintf("graph %s: node %s: %s names %s, which the graph does not hold", name, d.node, d.pred, d.target),
		})
	}
	if s.seqErr != nil {
		r.Findings = append(r.Findings, Finding{
			Check: CheckChain, Code: "graph-invalid", Severity: SevError, Class: ClassTampered, File: name,
			Message: fmt.Sprintf("graph %s: %v", name, s.seqErr),
		})
		return nil
	}
	order := make([]int32, 0, len(s.evs))
	session := ""
	for i := range s.evs {
		if s.evs[i].kind == "" {
			continue
		}
		if s.evs[i].kind == eventlog.KindSessionStart {
			session = s.evs[i].a
		}
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := s.evs[a].seq, s.evs[b].seq
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	r.Evidence.Session = session
	for src, k := range s.srcs {
		if src != "" {
			r.Evidence.addSource(src)
			r.Evidence.Sources[src] += k - 1
		}
	}
	r.Evidence.finishProvenance()
	c := newChecker(plan, name)
	for _, i := range order {
		e := s.event(&s.evs[i])
		if e.Kind == eventlog.KindSessionStart {
			if e.Header != nil {
				r.Evidence.ImportedFrom = e.Header.ImportedFrom
			}
			c.header(e, 0)
			continue
		}
		r.Evidence.Events++
		c.event(e, 0)
	}
	c.finish()
	r.Findings = append(r.Findings, c.findings...)
	mergeNotCheckable(r, c.notCheckable)
	mergeUnrun(r, c.unrun)
	// CheckRun on a graph without join statements, with no untrusted
	// source in the plan, judges nothing; it marks what it ran.
	if r.ran == nil {
		r.ran = map[string]bool{}
	}
	if plan.Untrusted != nil {
		r.ran[CheckInjection] = true
	}
	return nil
}
