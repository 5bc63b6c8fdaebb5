package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/verify"
)

// defaultCompactAbove is the number of events of a single log above which
// the graph-derived parts of the page (chains, counterfactuals, ranking,
// picture) are computed from compact projections of the streamed graph
// instead of the whole *graph.Graph (docs/design/report.md).
const defaultCompactAbove = 50000

// GCPercent is the garbage collector's target (runtime/debug.SetGCPercent)
// that `witness report` sets when GOGC is unset. A large log's report
// keeps a live heap of a few hundred MB (the graph stream's sort runs,
// replay's index), mostly pointer-free, so a collection costs little,
// while every page the heap grows by is a fresh page, which costs more
// here than marking it (docs/design/scale.md): a heap of 1.5 times the
// live one instead of twice is fewer pages for a few more collections.
const GCPercent = 50

// Bounds of the subgraph a compact report explains the findings on: the
// events the findings' events link to (call, input, cause, during,
// concerns), transitively, at most maxChainEvents of them.
const maxChainEvents = 4096

// compactGraph streams the graph of one log once (graph.StreamViews:
// StreamJSONLD's nodes, bounded by its external sort, as views, without
// writing or parsing the JSON-LD document) to one scan that feeds every
// node to replay's engine (replay.EngineBuilder, which keeps its index,
// not the graph) and keeps only what the page needs of the graph:
//   - the nodes of the events the findings' chains can reach (want: event
//     ids), as a subgraph why.Explain walks;
//   - the node each finding's event names (activity, else first entity);
//   - the label of each drawn activity (for the ranking);
//   - the picture: the drawn nodes (activities and entities of an event
//     with a timeline row, so at most maxEventRows events' nodes) with
//     their IRIs interned and their edges as index pairs.
//
// It also returns the stream's graph digest (the sha256 of the canonical
// N-Quads of the same graph: verify.Run's digest of the log without a
// seal), "" when the stream failed.
//
// The stream starts before the scan's inputs are known (startCompact): it
// maps and sorts every event before it hands on a node, so that work runs
// beside the verification and the first pass over the log; the scan waits
// for its inputs (in) at the first node, and a closed in cancels it. The
// result depends only on the inputs, never on when they come.
//
// With feed set, the stream reads the events verify.Run decoded (logTap)
// instead of the file, and drains the feed when it stops early.
func compactGraph(file string, feed *verify.EventFeed, in <-chan scanIn, o Options) (*runState, []string, string) {
	run := &runState{compact: true, primary: map[string]string{}, labels: map[string]string{}, pic: &picture{ids: map[string]int32{}}}
	var sub []*graph.Node
	ents := map[string]string{}
	// the inputs, or the cancellation (which also stops the mapping)
	var stop atomic.Bool
	got := make(chan scanIn, 1)
	canceled := make(chan struct{})
	go func() {
		args, ok := <-in
		if !ok {
			stop.Store(true)
			close(canceled)
			return
		}
		got <- args
	}()
	var args scanIn
	var pr projection
	var rows rowSet
	started := false
	eb := replay.NewEngineBuilder()
	causal := causalPreds()
	scan := func(v *graph.NodeView) error {
		if !started {
			select {
			case args = <-got:
			case <-canceled:
				return errCanceled
			}
			started = true
			rows = newRowSet(args.logs[0].rowOf)
			pr = projection{
				rowOf:   func(_ int, ev string) (int, bool) { return rows.row(ev) },
				classes: nodeClasses(args.logs), laneAt: args.laneAt, rels: graph.CausalRelations(),
			}
		}
		eb.Add(v)
		want := args.want
		if !viewNeeded(v, want, &rows) {
			return nil
		}
		// the kind reads the types only. An entity the picture does not
		// draw one by one (no label) and the chains do not want is
		// projected from a thin copy: its id, event id and causal
		// relations, all projectNode reads of it without a label
		kind := graph.DrawKind(&graph.Node{Types: v.Types})
		labels := run.pic.drawn < o.MaxGraphNodes+1
		if kind == "entity" && !labels && !viewWanted(v, want) {
			if g, ok := projectNode(thinNode(v, causal), 0, pr, false); ok {
				run.pic.add(g, o.MaxGraphNodes)
			}
			return nil
		}
		n := v.Node()
		ev := n.Value(graph.WEventID)
		if ev != "" && want[ev] {
			sub = append(sub, n)
			switch {
			case kind == "activity" && run.primary[ev] == "":
				run.primary[ev] = n.ID
			case kind == "entity" && ents[ev] == "":
				ents[ev] = n.ID
			}
		} else if ev == "" && pathWanted(n.ID, want) {
			sub = append(sub, n)
		}
		if g, ok := projectNode(n, 0, pr, labels); ok {
			run.pic.add(g, o.MaxGraphNodes)
			if kind == "activity" {
				// the ranking's labels, of the activities with a
				// timeline row (bounded as the rows are)
				run.labels[n.ID] = graph.NodeLabel(n)
			}
		}
		return nil
	}
	digest := ""
	var err error
	if feed != nil {
		var st graph.StreamStats
		st, err = graph.StreamViews(&tapSource{feed: feed, name: file, stop: &stop}, o.graphOpts, o.Stream, scan)
		// verify.Run may still be feeding a stream that stopped early
		feed.Drain()
		if err == nil {
			digest = st.Digest
		}
	} else if f, ferr := os.Open(file); ferr != nil {
		err = exitcode.Input("read events", ferr, "check the path given to --events")
	} else {
		var st graph.StreamStats
		st, err = graph.StreamViews(graph.NewEventSource(&stopReader{r: f, stop: &stop}, file), o.graphOpts, o.Stream, scan)
		f.Close()
		if err == nil {
			digest = st.Digest
		}
	}
	if err != nil {
		eb.Discard()
		return nil, []string{fmt.Sprintf("no causal graph: %v", err)}, digest
	}
	for ev, id := range ents {
		if run.primary[ev] == "" {
			run.primary[ev] = id
		}
	}
	run.g = &graph.Graph{Nodes: sub}
	// the stream's sort runs and merge buffers are garbage now: collect
	// them before Finish and the ranking allocate, so that those reuse
	// their pages instead of growing the heap towards twice the stream's
	// live peak (a fresh page is the cost: docs/design/scale.md)
	runtime.GC()
	if eng, err := eb.Finish(); err != nil {
		run.engErr = err
	} else {
		run.eng = eng
	}
	return run, nil, digest
}

// viewWanted reports whether the scan keeps v in the chains' subgraph:
// its witness:eventId is a wanted event, or it has none and a segment of
// its IRI is one (pathWanted), as the scan reads the node.
func viewWanted(v *graph.NodeView, want map[string]bool) bool {
	if ev := viewValue(v, graph.WEventID); len(ev) > 0 {
		return want[string(ev)]
	}
	return pathWanted(string(v.ID), want)
}

// causalPreds are the predicates of graph.CausalRelations.
func causalPreds() map[string]bool {
	m := map[string]bool{}
	for _, r := range graph.CausalRelations() {
		m[r.Pred] = true
	}
	return m
}

// thinNode is the node of v with only what projectNode reads of it when
// it makes no label: its IRI, types (v's, not copied: the node must not
// outlive the call that gives v), witness:eventId and the causal
// relations (the predicates of causal), their values copied in order.
func thinNode(v *graph.NodeView, causal map[string]bool) *graph.Node {
	n := &graph.Node{ID: string(v.ID), Types: v.Types, Props: map[string][]graph.Term{}}
	for _, p := range v.Props {
		if p.Pred != graph.WEventID && !causal[p.Pred] {
			continue
		}
		vals := make([]graph.Term, len(p.Vals))
		for j, t := range p.Vals {
			if len(t.IRI) > 0 {
				vals[j] = graph.Term{IRI: string(t.IRI)}
			} else {
				vals[j] = graph.Term{Lex: string(t.Lex), Datatype: t.Datatype}
			}
		}
		n.Props[p.Pred] = vals
	}
	return n
}

// viewNeeded reports whether the scan can use the node v: a node of a
// wanted event (its witness:eventId, else a segment of its IRI, as
// pathWanted reads it) or one the picture may draw (its event, as
// graph.NodeEvent reads it, has a timeline row). It is a cheap superset
// of the nodes the scan keeps: only those become a *graph.Node.
func viewNeeded(v *graph.NodeView, want map[string]bool, rows *rowSet) bool {
	if ev := viewValue(v, graph.WEventID); len(ev) > 0 {
		return rows.has(ev) || want[string(ev)]
	}
	id := v.ID
	last := id
	if i := bytes.LastIndexByte(id, '/'); i >= 0 && i+1 < len(id) {
		last = id[i+1:]
	}
	if rows.noID || rows.has(last) {
		return true
	}
	for {
		i := bytes.IndexByte(id, '/')
		seg := id
		if i >= 0 {
			seg = id[:i]
		}
		if want[string(seg)] {
			return true
		}
		if i < 0 {
			return false
		}
		id = id[i+1:]
	}
}

// rowSet answers whether an event id has a timeline row (a key of the
// first pass's rowOf) for every node of the graph stream. When the rows'
// ids are the writer's ("e<row>" for row 0 to n-1, every row's id
// distinct) the answer is read from the id (rowOfID), without hashing it
// into the map of 200,000 ids.
type rowSet struct {
	rowOf map[string]int
	// writer: rowOf holds exactly "e<k>" -> k for k < len(rowOf)
	writer bool
	// noID: rowOf has the empty id
	noID bool
}

func newRowSet(rowOf map[string]int) rowSet {
	s := rowSet{rowOf: rowOf, writer: true}
	_, s.noID = rowOf[""]
	for id, row := range rowOf {
		if n, ok := rowOfID(id); !ok || n != row || row >= len(rowOf) {
			s.writer = false
			break
		}
	}
	return s
}

// has reports whether id is a key of rowOf.
func (s *rowSet) has(id []byte) bool {
	if s.writer {
		n, ok := rowOfID(id)
		return ok && n < len(s.rowOf)
	}
	_, ok := s.rowOf[string(id)]
	return ok
}

// row is rowOf[id] and whether id is a key of rowOf.
func (s *rowSet) row(id string) (int, bool) {
	if s.writer {
		n, ok := rowOfID(id)
		return n, ok && n < len(s.rowOf)
	}
	r, ok := s.rowOf[id]
	return r, ok
}

// viewValue is the first literal of v under pred (graph.Node.Value of the
// view's node), nil when it has none.
func viewValue(v *graph.NodeView, pred string) []byte {
	for _, p := range v.Props {
		if p.Pred != pred {
			continue
		}
		for _, t := range p.Vals {
			if len(t.IRI) == 0 {
				return t.Lex
			}
		}
		return nil
	}
	return nil
}

// stopReader reads r until stop is set, then fails: a canceled stream
// stops mapping events.
type stopReader struct {
	r    io.Reader
	stop *atomic.Bool
}

func (s *stopReader) Read(p []byte) (int, error) {
	if s.stop.Load() {
		return 0, errCanceled
	}
	return s.r.Read(p)
}

// compactLikely reports whether the single log file is likely to be
// reported compactly (more than CompactAbove events): a log of more than
// 256 bytes per event of that bound. It only decides whether the graph
// stream starts early (startCompact, canceled when the count says no),
// never what the page shows.
func compactLikely(file string, o Options) bool {
	above := o.CompactAbove
	if above == 0 {
		above = defaultCompactAbove
	}
	if above < 0 {
		return true
	}
	fi, err := os.Stat(file)
	return err == nil && fi.Size()/256 > int64(above)
}

// scanIn are the inputs of compactGraph's scan: the logs (their timeline
// rows), the wanted events and the lane of a row.
type scanIn struct {
	logs   []*logState
	want   map[string]bool
	laneAt func(int, string, int) int
}

// errCanceled ends the graph stream of a report that does not need it.
var errCanceled = errors.New("report: graph stream canceled")

// compactStream is a compactGraph under way (startCompact).
type compactStream struct {
	in  chan scanIn
	out chan compactOut
	// owesDigest: verify.Run was told not to compute the log's graph
	// digest (verify.Options.NoGraphDigest); the report fills it in
	// (fillDigest)
	owesDigest bool
}

type compactOut struct {
	run    *runState
	notes  []string
	digest string
}

// startCompact starts compactGraph on file (on feed's events when feed
// is set); finish gives it its inputs and returns its result, cancel ends
// it. One of the two must be called, after feed is closed.
func startCompact(file string, feed *verify.EventFeed, o Options) *compactStream {
	cs := &compactStream{in: make(chan scanIn, 1), out: make(chan compactOut, 1)}
	go func() {
		run, notes, digest := compactGraph(file, feed, cs.in, o)
		cs.out <- compactOut{run: run, notes: notes, digest: digest}
	}()
	return cs
}

// finish gives the scan its inputs and waits for the graph and the
// graph digest ("" when the stream failed).
func (cs *compactStream) finish(logs []*logState, want map[string]bool, laneAt func(int, string, int) int) (*runState, []string, string) {
	cs.in <- scanIn{logs: logs, want: want, laneAt: laneAt}
	r := <-cs.out
	return r.run, r.notes, r.digest
}

// cancel ends a stream whose graph is not needed and waits for its end.
func (cs *compactStream) cancel() {
	close(cs.in)
	<-cs.out
}

// pathWanted reports whether an IRI without an event id names a wanted
// event in one of its segments (a model turn's tool call:
// ".../msg/e4/tool-call/0").
func pathWanted(iri string, want map[string]bool) bool {
	for _, s := range strings.Split(iri, "/") {
		if want[s] {
			return true
		}
	}
	return false
}

// chainEvents are the events whose nodes a finding's chain can reach: the
// findings' events and, transitively, the events they link to, at most
// maxChainEvents (false when the bound cut the closure).
func chainEvents(start []string, links map[string][]string) (map[string]bool, bool) {
	want := map[string]bool{}
	queue := []string{}
	for _, ev := range start {
		if ev != "" && !want[ev] {
			want[ev] = true
			queue = append(queue, ev)
		}
	}
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		for _, l := range links[ev] {
			if want[l] {
				continue
			}
			if len(want) >= maxChainEvents {
				return want, false
			}
			want[l] = true
			queue = append(queue, l)
		}
	}
	return want, true
}

// picture is the compact projection of the drawn nodes: up to
// MaxGraphNodes of them whole (drawn one by one), above that only what a
// summary needs.
type picture struct {
	ids   map[string]int32
	nodes []snode
	edges []sedge
	full  []gnode
	drawn int
}

func (pc *picture) intern(id string) int32 {
	if i, ok := pc.ids[id]; ok {
		return i
	}
	i := int32(len(pc.nodes))
	pc.ids[id] = i
	pc.nodes = append(pc.nodes, snode{row: -1})
	return i
}

func (pc *picture) add(g gnode, maxFull int) {
	pc.drawn++
	if pc.drawn <= maxFull {
		pc.full = append(pc.full, g)
	} else {
		pc.full = nil
	}
	i := pc.intern(g.id)
	pc.nodes[i] = snode{row: int32(g.row), lane: int32(g.lane), class: g.class}
	for _, e := range g.edges {
		pc.edges = append(pc.edges, sedge{from: i, to: pc.intern(e.to), rel: int32(e.rel)})
	}
}

// draw lays the picture out as draw does the whole graph's nodes.
func (pc *picture) draw(lanes *interner, o Options) Picture {
	if pc.drawn <= o.MaxGraphNodes {
		return draw(pc.full, lanes, o)
	}
	p := frame(pc.drawn, lanes)
	drawSummary(&p, pc.nodes, pc.edges, o.GraphWindows)
	return p
}

// logDigest is the graph digest verify.Run gives a single log: the
// sha256 of the canonical N-Quads of its graph (opts: graph.Options{}
// without a seal, the seal as plan with one), "" when the log does not
// map to a graph. For the report whose graph stream was canceled (a log
// of few events) but that told verify not to compute it.
func logDigest(file string, opts graph.Options) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := graph.StreamNQuads(graph.NewEventSource(f, file), io.Discard, opts, graph.StreamOptions{})
	if err != nil {
		return ""
	}
	return st.Digest
}
