package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
)

// This file is CheckGraph without the graph (docs/design/scale.md, "verify
// --graph"): one graph.ScanJSONLD of the document projects each node at
// once into what checkGraph reads of it, and drops the node. Kept: the
// node IRIs (one byte arena, sorted, since a canonical document's nodes
// come in IRI order), the event nodes' fields as eventsFromGraph reads
// them, the values of argument entities, the tool definitions, the
// distinct IRIs referenced ahead of the current node and not yet seen
// (nodes come in IRI order, so a reference is settled when the scan
// reaches or passes its target) and the graph digest's running hash. The
// results are those of checkGraph on the graph ReadJSONLD would read;
// where the projection cannot say that (nodes out of order, a dangling
// reference, join statements, untrusted sources in the plan) the document
// is read again the old way.

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
	refs    []string // call: prov:used; effect: prov:wasGeneratedBy
	kind    uint8    // index in graphKinds
	effect  bool     // an effect with an op
}

// eventChunk is the number of graphEvents in one chunk: the records grow
// by chunks, never by a doubling copy.
const eventChunk = 1 << 12

// graphScan is the projection of a graph document.
type graphScan struct {
	ids    []byte  // node IRIs, in order
	offs   []int   // ids[offs[i]:offs[i+1]] is node i's IRI
	evOf   []int32 // node index → 1 + index of its event, 0 for a node without event id
	evs    [][]graphEvent
	nev    int
	legacy map[int32]string // event index → witness:legacySealRef
	args   map[int32]string // argument entity node → its valid JSON value
	tools  []eventlog.ToolDef
	ahead  map[string]struct{} // IRIs referenced, after the current node's, not yet seen
	srcs   map[string]int64
	names  map[string]string
	digest *graph.NQuadsDigest
	seqErr error
}

func newGraphScan() *graphScan {
	return &graphScan{args: map[int32]string{}, legacy: map[int32]string{}, ahead: map[string]struct{}{}, srcs: map[string]int64{},
		names: map[string]string{}, digest: graph.NewNQuadsDigest(), offs: []int{0}}
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

// ev returns event i.
func (s *graphScan) ev(i int) *graphEvent { return &s.evs[i/eventChunk][i%eventChunk] }

// find returns the index of the node with IRI iri among the first n, or -1.
func (s *graphScan) find(iri string, n int) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(s.id(m)) < iri {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < n && string(s.id(lo)) == iri {
		return lo
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
	// a reference ahead to this node is settled; one to an IRI it passes
	// stays, and is dangling at the end
	delete(s.ahead, n.ID)
	s.ids = append(s.ids, n.ID...)
	s.offs = append(s.offs, len(s.ids))
	s.evOf = append(s.evOf, 0)
	for _, vals := range n.Props {
		for _, t := range vals {
			switch {
			case !t.IsIRI() || t.IRI == n.ID:
			case t.IRI < n.ID:
				if s.find(t.IRI, k) < 0 {
					return errGraphReread // dangling: the whole read lists them
				}
			default:
				if _, ok := s.ahead[t.IRI]; !ok {
					s.ahead[strings.Clone(t.IRI)] = struct{}{}
				}
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
	eventID := n.Value(graph.WEventID)
	if eventID == "" {
		return nil
	}
	s.srcs[s.intern(n.Value(graph.WSource))]++
	seq, err := strconv.ParseInt(n.Value(graph.WSeq), 10, 64)
	if err != nil && s.seqErr == nil {
		s.seqErr = fmt.Errorf("node %s: field witness:seq: %q is not an integer", n.ID, n.Value(graph.WSeq))
	}
	e := graphEvent{seq: seq, id: eventID}
	payload := func() {
		if v := n.Value(graph.ProvValue); v != "" && json.Valid([]byte(v)) {
			e.c = v
		}
	}
	switch {
	case n.HasType(graph.WCaptureSession):
		e.kind = gkSession
		e.a, e.b, e.c = n.Value(graph.WSession), n.Value(graph.WImportedFrom), n.Value(graph.WBoundSeal)
	case n.HasType(graph.WToolCall):
		e.kind = gkCall
		e.a = s.intern(n.Value(graph.OtelToolName))
		if rid := n.Value(graph.WRPCIDJSON); rid != "" && json.Valid([]byte(rid)) {
			e.b = rid
		}
		e.refs = n.Refs(graph.ProvUsed)
	case n.HasType(graph.WExternalEffect):
		e.kind = gkEffect
		e.a = s.intern(n.Value(graph.OtelToolName))
		if op := n.Value(graph.WEffectOp); op != "" {
			e.effect, e.b, e.c = true, s.intern(op), n.Value(graph.WEffectTarget)
		}
		e.refs = n.Refs(graph.ProvWasGeneratedBy)
	case n.HasType(graph.WModelMessage):
		if len(n.Refs(graph.ProvWasGeneratedBy)) > 0 {
			e.kind = gkModelOutput
		} else {
			e.kind = gkModelInput
		}
		e.a = s.intern(n.Value(graph.WRole))
		payload()
	case n.HasType(graph.WNotification):
		e.kind = gkNotification
		e.a = s.intern(n.Value(graph.OtelMCPMethodName))
	case n.HasType(graph.WAmbiguousLine):
		e.kind = gkAmbiguous
		payload()
	}
	if l := n.Value(graph.WLegacySealRef); l != "" {
		s.legacy[int32(s.nev)] = l
	}
	if s.nev%eventChunk == 0 {
		s.evs = append(s.evs, make([]graphEvent, 0, eventChunk))
	}
	s.evs[len(s.evs)-1] = append(s.evs[len(s.evs)-1], e)
	s.nev++
	s.evOf[k] = int32(s.nev)
	return nil
}

// finish settles the references ahead: any left is dangling.
func (s *graphScan) finish() error {
	if len(s.ahead) > 0 {
		return errGraphReread
	}
	return nil
}

// event returns event i as eventsFromGraph builds it.
func (s *graphScan) event(i int) *eventlog.Event {
	n := len(s.offs) - 1
	e := s.ev(i)
	ev := &eventlog.Event{ID: e.id, Seq: e.seq, Kind: graphKinds[e.kind]}
	if l, ok := s.legacy[int32(i)]; ok {
		ev.Legacy = &eventlog.Legacy{SealRef: l}
	}
	switch e.kind {
	case gkModelInput, gkModelOutput, gkAmbiguous:
		if e.c != "" {
			ev.Payload = json.RawMessage(e.c)
		}
	}
	switch e.kind {
	case gkSession:
		h := &eventlog.Header{ImportedFrom: e.b}
		if e.c != "" {
			h.Seal = &eventlog.SealRef{Digest: e.c}
		}
		if len(s.tools) > 0 {
			h.Server = &eventlog.ServerInfo{Tools: slices.Clone(s.tools)}
			sort.SliceStable(h.Server.Tools, func(i, j int) bool { return h.Server.Tools[i].Name < h.Server.Tools[j].Name })
		}
		ev.Header = h
	case gkCall:
		ev.Tool = e.a
		if e.b != "" {
			ev.RPCID = json.RawMessage(e.b)
		}
		for _, u := range e.refs {
			if i := s.find(u, n); i >= 0 {
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
			ev.Call = ""
			if i := s.find(c, n); i >= 0 && s.evOf[i] > 0 {
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

// checkGraphStream is checkGraph on the document in rd, scanned. It
// returns errGraphReread, having changed nothing in r, when the document
// must be read whole (checkGraph); any other error is the read's.
func checkGraphStream(r *Report, plan Plan, name string, rd io.Reader) error {
	if len(plan.Untrusted) > 0 {
		return errGraphReread // injection-provenance walks the graph
	}
	s := newGraphScan()
	err := graph.ScanJSONLD(rd, name, s.add)
	if err == nil {
		err = s.finish()
	}
	if err != nil {
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
	s.digest, s.ahead = nil, nil
	r.Evidence.GraphDigest = digest
	r.Evidence.Lines = int64(len(s.offs) - 1)
	if s.seqErr != nil {
		r.Findings = append(r.Findings, Finding{
			Check: CheckChain, Code: "graph-invalid", Severity: SevError, Class: ClassTampered, File: name,
			Message: fmt.Sprintf("graph %s: %v", name, s.seqErr),
		})
		return nil
	}
	order := make([]int32, 0, s.nev)
	session := ""
	for i := 0; i < s.nev; i++ {
		e := s.ev(i)
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
	for src, k := range s.srcs {
		if src != "" {
			r.Evidence.addSource(src)
			r.Evidence.Sources[src] += k - 1
		}
	}
	r.Evidence.finishProvenance()
	c := newChecker(plan, name)
	for _, i := range order {
		e := s.event(int(i))
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
