package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
)

// CheckGraph judges a witness graph (JSON-LD written by 'witness graph')
// against plan and adds its findings to r. The graph carries the events'
// ids, JSON-RPC ids, tools, arguments (unless written with --no-payloads),
// roles and effects, so every check but the hash chain runs on it; the chain
// and the signed end are not in a graph, which the report says as a notice.
// A reference to a node the graph does not hold is tampering. The graph
// digest (sha256 of its canonical N-Quads) is recorded.
//
// CheckGraph judges what the graph says, not whether it is authentic: Run
// adds the graph-unauthenticated finding when a graph is verified without
// its event log.
//
// A reader that can seek is scanned node by node and the graph never held
// (checkGraphStream); it is sought back and read whole when the scan cannot
// judge it alike (docs/design/scale.md). Any other reader is read whole.
func CheckGraph(r *Report, plan Plan, name string, rd io.Reader) error {
	return CheckGraphWithout(r, plan, name, rd, nil)
}

// CheckGraphWithout is CheckGraph on the graph in rd read without the nodes
// drop names and without every reference to them (graph.Without; drop nil:
// CheckGraph itself): a counterfactual reading of the document, for
// replay's drift overlay. The document is scanned and the filtered graph
// never built when rd can seek and the scan can judge it; otherwise it is
// read whole and filtered (docs/design/scale-history.md, "replay --seal"). With
// drop set, Evidence.GraphDigest stays empty: the graph judged is held by
// no file, so its digest would name no evidence (and the digest is never
// a finding).
func CheckGraphWithout(r *Report, plan Plan, name string, rd io.Reader, drop func(iri []byte) bool) error {
	if rs, ok := rd.(io.ReadSeeker); ok {
		start, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			return checkGraphOrRereadWithout(r, plan, name, rs, func() (io.Reader, func(), error) {
				_, err := rs.Seek(start, io.SeekStart)
				return rs, func() {}, err
			}, drop)
		}
	}
	graphEvidence(r, name)
	return checkGraphWhole(r, plan, name, rd, drop, drop == nil)
}

// checkGraphFile is CheckGraph on the graph file name, opened as f by
// openGraph: scanned, and opened again if it must be read whole.
func checkGraphFile(r *Report, plan Plan, name string, f io.Reader) error {
	return checkGraphOrReread(r, plan, name, f, func() (io.Reader, func(), error) {
		g, err := openGraph(name)
		if err != nil {
			return nil, nil, err
		}
		return g, func() { g.Close() }, nil
	})
}

// graphEvidence names the graph as the evidence; a graph has no chain.
func graphEvidence(r *Report, name string) {
	r.Evidence.Kind = "graph"
	r.Evidence.File = name
	mergeNotCheckable(r, map[string]string{
		checkChain: "a graph carries no hash chain or signed end; verify the event log with --events for them",
	})
}

// checkGraphOrReread is CheckGraph on a document scanned, not held
// (checkGraphStream), from rd; when the scan cannot judge it as the whole
// read would, reopen gives the document again (and a function closing it),
// and it is read whole.
func checkGraphOrReread(r *Report, plan Plan, name string, rd io.Reader, reopen func() (io.Reader, func(), error)) error {
	return checkGraphOrRereadWithout(r, plan, name, rd, reopen, nil)
}

// checkGraphOrRereadWithout is checkGraphOrReread on the document read
// without the nodes drop names (CheckGraphWithout), scanned or read whole.
func checkGraphOrRereadWithout(r *Report, plan Plan, name string, rd io.Reader, reopen func() (io.Reader, func(), error), drop func(iri []byte) bool) error {
	graphEvidence(r, name)
	err := checkGraphStream(r, plan, name, rd, drop)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errGraphReread):
		rd2, closeFn, err := reopen()
		if err != nil {
			return fmt.Errorf("graph %s: read again: %w", name, err)
		}
		defer closeFn()
		return checkGraphWhole(r, plan, name, rd2, drop, drop == nil)
	}
	return err
}

// checkGraphWhole is CheckGraph on the graph read whole (ReadJSONLD),
// without the nodes drop names when drop is set (graph.Without), and with
// its digest when digest is set.
func checkGraphWhole(r *Report, plan Plan, name string, rd io.Reader, drop func(iri []byte) bool, digest bool) error {
	g, err := graph.ReadJSONLD(rd, name)
	if err != nil {
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-invalid", Severity: SevError, Class: classTampered, File: name,
			Message: err.Error(),
		})
		return nil
	}
	if drop != nil {
		g = graph.Without(g, func(id string) bool { return drop([]byte(id)) })
	}
	return checkGraph(r, plan, name, g, digest)
}

// checkGraph is CheckGraph on a graph already read, with its digest when
// digest is set.
func checkGraph(r *Report, plan Plan, name string, g *graph.Graph, digest bool) error {
	if digest {
		d, err := g.WriteNQuads(io.Discard)
		if err != nil {
			return fmt.Errorf("graph %s: canonical n-quads: %w", name, err)
		}
		r.Evidence.GraphDigest = d
	}
	r.Evidence.Lines = int64(g.Len())
	dangling := danglingRefs(g)
	for i, d := range dangling {
		if i == maxDanglingFindings {
			r.Findings = append(r.Findings, Finding{
				Check: checkChain, Code: "findings-dropped", Severity: sevNotice, Class: ClassNotice, File: name,
				Message: fmt.Sprintf("%d more graph-dangling findings were not listed", len(dangling)-i),
			})
			break
		}
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-dangling", Severity: SevError, Class: classTampered, File: name,
			EventID: d.eventID,
			Message: fmt.Sprintf("graph %s: node %s: %s names %s, which the graph does not hold", name, d.node, d.pred, d.target),
		})
	}
	evs, session, err := eventsFromGraph(g)
	if err != nil {
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-invalid", Severity: SevError, Class: classTampered, File: name,
			Message: fmt.Sprintf("graph %s: %v", name, err),
		})
		return nil
	}
	r.Evidence.Session = session
	for _, n := range g.Nodes {
		if n.Value(graph.WEventID) != "" {
			r.Evidence.addSource(n.Value(graph.WSource))
		}
	}
	r.Evidence.finishProvenance()
	judgeGraphEvents(r, plan, name, len(evs), func(i int) *eventlog.Event { return evs[i] })
	checkRun(r, plan, g, nil)
	return nil
}

// judgeGraphEvents runs the checker on the n events a graph carries, in
// seq order (ev(i): the i-th), and adds its findings to r: the one feed of
// the whole read (checkGraph) and of the scan (graphstream.go).
func judgeGraphEvents(r *Report, plan Plan, name string, n int, ev func(int) *eventlog.Event) {
	c := newChecker(plan, name)
	for i := 0; i < n; i++ {
		e := ev(i)
		if e.Kind == eventlog.KindSessionStart {
			if e.Header != nil {
				r.Evidence.ImportedFrom = e.Header.ImportedFrom
			}
			c.header(e, 0)
			continue
		}
		r.Evidence.Events++
		c.wire(e, 0)
		c.event(e, 0)
	}
	c.finish()
	r.Findings = append(r.Findings, c.findings...)
	mergeNotCheckable(r, c.notCheckable)
	mergeUnrun(r, c.unrun)
}

// maxDanglingFindings caps the graph-dangling findings listed.
const maxDanglingFindings = 100

// dangling is a reference to a node the graph does not hold.
type dangling struct{ node, pred, target, eventID string }

// danglingRefs returns, in node and predicate order, every IRI-valued
// property whose target is not a node of g. 'witness graph' writes every
// node it names, so a dangling reference means the graph was edited (a node
// removed, an IRI changed).
func danglingRefs(g *graph.Graph) []dangling {
	var out []dangling
	for _, n := range g.Nodes {
		for _, p := range n.Predicates() {
			for _, t := range n.Props[p] {
				if t.IsIRI() && g.Node(t.IRI) == nil {
					out = append(out, dangling{node: n.ID, pred: p, target: t.IRI, eventID: n.Value(graph.WEventID)})
				}
			}
		}
	}
	return out
}

// eventsFromGraph rebuilds, from the primary node of each event, the fields
// the checks read, in seq order.
func eventsFromGraph(g *graph.Graph) ([]*eventlog.Event, string, error) {
	idOf := func(iri string) string {
		if n := g.Node(iri); n != nil {
			return n.Value(graph.WEventID)
		}
		return ""
	}
	var evs []*eventlog.Event
	session := ""
	for _, n := range g.Nodes {
		id := n.Value(graph.WEventID)
		if id == "" {
			continue
		}
		seq, err := strconv.ParseInt(n.Value(graph.WSeq), 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("node %s: field witness:seq: %q is not an integer", n.ID, n.Value(graph.WSeq))
		}
		e := &eventlog.Event{ID: id, Seq: seq}
		if ls := n.Value(graph.WLegacySealRef); ls != "" {
			e.Legacy = &eventlog.Legacy{SealRef: ls}
		}
		payload := func(of *graph.Node) {
			if of == nil {
				return
			}
			if v := of.Value(graph.ProvValue); v != "" && json.Valid([]byte(v)) {
				e.Payload = json.RawMessage(v)
			}
		}
		switch {
		case n.HasType(graph.WCaptureSession):
			e.Kind = eventlog.KindSessionStart
			session = n.Value(graph.WSession)
			h := &eventlog.Header{ImportedFrom: n.Value(graph.WImportedFrom)}
			if d := n.Value(graph.WBoundSeal); d != "" {
				h.Seal = &eventlog.SealRef{Digest: d}
			}
			for _, td := range g.OfType(graph.WToolDefinition) {
				if h.Server == nil {
					h.Server = &eventlog.ServerInfo{}
				}
				h.Server.Tools = append(h.Server.Tools, eventlog.ToolDef{Name: td.Value(graph.OtelToolName), SHA256: td.Value(graph.WDefinitionSHA256)})
			}
			if h.Server != nil {
				sort.SliceStable(h.Server.Tools, func(i, j int) bool { return h.Server.Tools[i].Name < h.Server.Tools[j].Name })
			}
			e.Header = h
		case n.HasType(graph.WToolCall):
			e.Kind = eventlog.KindToolCall
			e.Tool = n.Value(graph.OtelToolName)
			if rid := n.Value(graph.WRPCIDJSON); rid != "" && json.Valid([]byte(rid)) {
				e.RPCID = json.RawMessage(rid)
			}
			for _, u := range n.Refs(graph.ProvUsed) {
				if a := g.Node(u); a != nil && a.HasType(graph.WArguments) {
					payload(a)
				}
			}
		case n.HasType(graph.WExternalEffect):
			e.Kind = eventlog.KindExternalEffect
			e.Tool = n.Value(graph.OtelToolName)
			if op := n.Value(graph.WEffectOp); op != "" {
				e.Effect = &eventlog.Effect{Op: op, Target: n.Value(graph.WEffectTarget)}
			}
			for _, c := range n.Refs(graph.ProvWasGeneratedBy) {
				e.Call = idOf(c)
			}
		case n.HasType(graph.WModelMessage):
			if len(n.Refs(graph.ProvWasGeneratedBy)) > 0 {
				e.Kind = eventlog.KindModelOutput
			} else {
				e.Kind = eventlog.KindModelInput
			}
			e.Role = n.Value(graph.WRole)
			payload(n)
		case n.HasType(graph.WNotification):
			e.Kind = eventlog.KindNotification
			e.Method = n.Value(graph.OtelMCPMethodName)
		case n.HasType(graph.WAmbiguousLine):
			e.Kind = eventlog.KindAmbiguous
			payload(n)
		default:
			continue
		}
		evs = append(evs, e)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
	return evs, session, nil
}
