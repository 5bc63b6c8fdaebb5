package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/verify"
)

// lane codes of a single log's events, kept one byte per event for the
// timeline's buckets (the lane ids are only known once the server's name
// is read)
const (
	laneUser = iota
	laneAgent
	laneModel
	laneServer
	laneEffects
	laneWitness
)

func laneCode(e *eventlog.Event) uint8 {
	switch laneKind(e) {
	case "user":
		return laneUser
	case "agent":
		return laneAgent
	case "model":
		return laneModel
	case "server":
		return laneServer
	case "effects":
		return laneEffects
	}
	return laneWitness
}

// buildSingle reports on one log without keeping its events: one pass
// keeps the timeline rows (at most maxEventRows), one lane byte per event
// for the buckets and the log's summary; a second pass re-reads the few
// events whose details are embedded (docs/design/report.md).
func buildSingle(o Options, d *Data, lanes, kinds, labels *interner, runRep *verify.Report, fp *firstPass, cs *compactStream) (*Data, error) {
	file := o.Events[0]
	ls := &logState{file: file, rowOf: map[string]int{}, rep: runRep, findings: runRep.Findings}
	logs := []*logState{ls}
	rep := runRep
	lg := Log{File: filepath.Base(file), Session: rep.Evidence.Session, Verdict: string(rep.Verdict), ExitCode: int(rep.Code()),
		Line: rep.VerdictLine(), Qualifiers: rep.Qualifiers, Seal: rep.Seal.Digest, Signers: rep.Seal.Signers, Provenance: rep.Evidence.Provenance}
	for _, c := range rep.Checks {
		lg.Checks = append(lg.Checks, checkRow(c, rep.Findings))
	}
	findingEvents := map[string]bool{}
	for _, f := range ls.findings {
		if f.EventID != "" {
			findingEvents[f.EventID] = true
		}
	}
	if fp.openErr != nil {
		if cs != nil {
			cs.cancel()
		}
		return nil, fp.openErr
	}
	ls.server, ls.rowOf, ls.effects = fp.server, fp.rowOf, fp.effects
	lg.EndSigned, lg.Cassette = fp.endSigned, fp.cassette
	links, codes, kept, rerr := fp.links, fp.codes, fp.kept, fp.rerr
	d.Timeline.Rows = fp.rows
	for i, id := range fp.rowIDs {
		if findingEvents[id] {
			d.Timeline.Rows[i][5] |= 1
		}
	}
	fp = nil
	if rerr != nil {
		lg.ReadError = rerr.Error()
		d.Notes = append(d.Notes, fmt.Sprintf("%s: read %d events, then: %v", lg.File, len(codes), rerr))
	}
	lg.Server = ls.server
	lg.Events = len(codes)
	d.Logs = append(d.Logs, lg)

	above := o.CompactAbove
	if above == 0 {
		above = defaultCompactAbove
	}
	compact := above < 0 || len(codes) > above
	var run *runState
	if !compact && cs != nil {
		cs.cancel()
		if cs.owesDigest {
			fillDigest(d, runRep, logDigest(file, o.graphOpts))
		}
		cs = nil
	}
	if !compact {
		links = nil
		if g, err := buildGraph(file, o.graphOpts); err == nil {
			run = &runState{g: g}
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf("no causal graph: %v", err))
		}
	}
	// lanes: user, agent, model, the server if it has events, effects,
	// witness
	if hasCode(codes, laneServer) {
		lanes.id(serverLane(ls.server))
	}
	lanes.id("effects")
	lanes.id("witness")
	var laneID [laneWitness + 1]int
	for c, l := range []string{"user", "agent", "model", serverLane(ls.server), "effects", "witness"} {
		laneID[c] = lanes.ix[l]
	}
	d.Verdict = Verdict{Verdict: string(runRep.Verdict), ExitCode: int(runRep.Verdict.ExitCode()), Class: runRep.Verdict.ExitCode().Name(), Line: runRep.VerdictLine()}

	total := len(codes)
	if total > maxEventRows {
		d.Notes = append(d.Notes, fmt.Sprintf("the event list keeps the first %d of %d events; the timeline counts all of them", maxEventRows, total))
	}
	d.Timeline.Total = total
	for i := range d.Timeline.Rows {
		d.Timeline.Rows[i][2] = int64(laneID[codes[i]])
	}
	if total > o.MaxTimeline {
		size := (total + o.Buckets - 1) / o.Buckets
		d.Timeline.Size = size
		nb := (total + size - 1) / size
		d.Timeline.Buckets = make([][]int, len(lanes.list))
		for l := range d.Timeline.Buckets {
			d.Timeline.Buckets[l] = make([]int, nb)
		}
		for i, c := range codes {
			d.Timeline.Buckets[laneID[c]][i/size]++
		}
	}
	codes = nil
	laneAt := func(_ int, _ string, row int) int { return int(d.Timeline.Rows[row][2]) }
	if compact {
		var start []string
		for _, f := range ls.findings {
			start = append(start, f.EventID)
		}
		want, whole := chainEvents(start, links.closure(start))
		links = nil
		var notes []string
		if cs == nil {
			cs = startCompact(file, nil, o)
		}
		var digest string
		run, notes, digest = cs.finish(logs, want, laneAt)
		if cs.owesDigest {
			fillDigest(d, runRep, digest)
		}
		d.Notes = append(d.Notes, notes...)
		if !whole && run != nil {
			d.Notes = append(d.Notes, fmt.Sprintf("%d events: the findings' chains are drawn from the nodes of the %d events their events link to, not from the whole graph", total, maxChainEvents))
		}
	}

	detailRows := map[int]bool{}
	graphParts(d, o, logs, run, detailRows)
	eventsAt := func(rows []int) ([]eventRef, error) { return reread(file, rows, kept) }
	if err := finish(d, o, logs, run, lanes, detailRows, eventsAt, laneAt); err != nil {
		return nil, err
	}
	d.Lanes, d.Kinds, d.Labels = lanes.list, kinds.list, labels.list
	return d, nil
}

// fillDigest sets the graph digest of the log's verdict (verify.Run left
// it to the report's graph stream: verify.Options.NoGraphDigest) and the
// verdict lines that show it.
func fillDigest(d *Data, runRep *verify.Report, digest string) {
	runRep.Evidence.GraphDigest = digest
	line := runRep.VerdictLine()
	d.Logs[0].Line = line
	if d.Verdict.Line != "" {
		d.Verdict.Line = line
	}
}

func hasCode(codes []uint8, c uint8) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

// buildGraph builds the graph of one log (opts: Options.graphOpts),
// reading it as a stream.
func buildGraph(file string, opts graph.Options) (*graph.Graph, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, exitcode.Input("read events", err, "check the path given to --events")
	}
	defer f.Close()
	return graph.Build(graph.NewEventSource(f, file), opts)
}

// firstPass is what the first pass over a single log keeps (readFirst).
type firstPass struct {
	server, cassette string
	endSigned        []string
	links            *linkTable // event id → the events it links to
	codes            []uint8    // a lane code per event
	kept             map[int]*eventlog.Event
	rows             [][6]int64 // the timeline rows, flags not set
	rowIDs           []string   // the event id of each row
	rowOf            map[string]int
	rerr             error // the read's error (not io.EOF)
	openErr          error
	effects          []effectRec
}

// readFirst reads the log once, without the verdict (it runs beside
// verify.Run): the timeline rows (their finding flags are set once the
// findings are known), a lane byte per event, the log's summary, each
// event's links and the earliest MaxDetails events (the findings' events
// that are not among them are re-read, as the chains' are).
func readFirst(file string, o Options, kinds, labels *interner) *firstPass {
	f, err := os.Open(file)
	if err != nil {
		fp := newFirstPass()
		fp.openErr = exitcode.Input("read events", err, "check the path given to --events")
		return fp
	}
	defer f.Close()
	r := eventlog.NewReader(f, file)
	r.SetFastWhole(true)
	return firstFrom(r, o, kinds, labels)
}

func newFirstPass() *firstPass {
	return &firstPass{links: &linkTable{}, kept: map[int]*eventlog.Event{}, rowOf: map[string]int{}}
}

// firstFrom is readFirst's pass over the events of r (an eventlog.Reader
// of the log with SetFastWhole, or the events verify.Run decoded: logTap),
// up to its first error.
func firstFrom(r graph.EventSource, o Options, kinds, labels *interner) *firstPass {
	fp := newFirstPass()
	for {
		e, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fp.rerr = exitcode.New(exitcode.Tampered, err, "")
			}
			break
		}
		if e.Header != nil && e.Header.Server != nil {
			fp.server = e.Header.Server.Name
		}
		fp.effects = addEffect(fp.effects, e)
		if e.End != nil {
			for _, s := range e.End.Signatures {
				fp.endSigned = append(fp.endSigned, s.KeyID)
			}
		}
		if e.Wire != nil && e.Wire.Cassette != "" && fp.cassette == "" {
			fp.cassette = e.Wire.Cassette
		}
		i := len(fp.codes)
		fp.links.add(i, e.ID, eventLinks(e))
		fp.codes = append(fp.codes, laneCode(e))
		if i < o.MaxDetails {
			fp.kept[i] = e
		}
		if i < maxEventRows {
			fp.rowOf[e.ID] = i
			fp.rowIDs = append(fp.rowIDs, e.ID)
			fp.rows = append(fp.rows, [6]int64{0, e.Seq, 0, int64(kinds.id(string(e.Kind))), int64(labels.id(eventLabel(e))), 0})
		}
	}
	return fp
}

// reread returns the events at rows (sorted, of the first pass): those the
// first pass kept, the others read again from the log, which is read only
// up to the last of them.
func reread(file string, rows []int, kept map[int]*eventlog.Event) ([]eventRef, error) {
	out := make([]eventRef, len(rows))
	var missing []int // indexes into rows
	for i, r := range rows {
		if e := kept[r]; e != nil {
			out[i] = eventRef{0, e}
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, exitcode.Input("read events", err, "check the path given to --events")
	}
	defer f.Close()
	r := eventlog.NewReader(f, file)
	r.SetFastWhole(true)
	for row := 0; len(missing) > 0; row++ {
		e, err := r.Next()
		if err != nil {
			return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("%s changed while the report was written: %w", file, err), "")
		}
		if row == rows[missing[0]] {
			out[missing[0]] = eventRef{0, e}
			missing = missing[1:]
		}
	}
	return out, nil
}

// graphParts adds the findings with their chains and counterfactuals and
// the blast-radius ranking, and marks the rows whose details to embed.
func graphParts(d *Data, o Options, logs []*logState, run *runState, detailRows map[int]bool) {
	var eng *replay.Engine
	if run != nil && run.compact {
		if eng = run.eng; eng == nil {
			d.Notes = append(d.Notes, fmt.Sprintf("no counterfactuals: %v", run.engErr))
		}
	} else if run != nil {
		if e, err := replay.NewEngine(run.g); err == nil {
			eng = e
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf("no counterfactuals: %v", err))
		}
	}
	for li, ls := range logs {
		for _, f := range ls.findings {
			if len(d.Findings) >= maxFindings {
				d.Notes = append(d.Notes, fmt.Sprintf("only the first %d findings are shown", maxFindings))
				break
			}
			df := Finding{Log: li, Code: f.Code, Class: string(f.Class), Severity: string(f.Severity), Message: f.Message, Event: f.EventID, Tool: f.Tool, Row: -1, vf: f}
			if r, ok := ls.rowOf[f.EventID]; ok && f.EventID != "" {
				df.Row = r
				detailRows[r] = true
			}
			if f.EventID != "" && run != nil {
				node := primaryNode(run, li, f.EventID)
				if node == "" {
					df.ChainNote = "the graph has no node for " + f.EventID
				} else if c, err := o.Explainer.Explain(run.g, node); err != nil {
					df.ChainNote = err.Error()
				} else {
					df.Chain = c
					for _, s := range c.Steps {
						r := -1
						if sl := run.logOf(s.Node); sl >= 0 && s.Event != "" {
							if rr, ok := logs[sl].rowOf[s.Event]; ok {
								r = rr
								detailRows[r] = true
							}
						}
						df.ChainRows = append(df.ChainRows, r)
					}
					if eng != nil {
						df.Removing = whatIf(eng, run, c)
					}
				}
			} else if f.EventID == "" {
				df.ChainNote = "this finding is about the whole " + findingScope(f) + ", not one event"
			}
			d.Findings = append(d.Findings, df)
		}
	}
	if eng != nil {
		rr := eng.Rank(o.TopRank)
		unnamed := 0
		for _, e := range rr.Ranking {
			label := e.Activity
			if l, ok := run.label(e.Activity); ok {
				label = l
			} else if run.compact {
				unnamed++
			}
			d.Rank = append(d.Rank, Ranked{Log: max(run.logOf(e.Activity), 0), Rank: e.Rank, Activity: e.Activity, Label: label, Tool: e.Tool,
				Size: e.CompensationSize, Activities: e.CompensationActivities, NotReplayable: e.NotReplayable, Residual: e.SynergyResidual})
		}
		if unnamed > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("%d of the ranked actions are named by their IRI: at this size the report keeps the labels of the first %d events' actions only", unnamed, maxEventRows))
		}
	}
}

// finish orders the findings, embeds the details, lays the graph out and
// reads the firewall audit.
func finish(d *Data, o Options, logs []*logState, run *runState, lanes *interner, detailRows map[int]bool,
	eventsAt func(rows []int) ([]eventRef, error), laneAt func(log int, ev string, row int) int) error {
	// details: finding and chain events first, then the earliest events
	for i := 0; i < len(d.Timeline.Rows) && len(detailRows) < o.MaxDetails; i++ {
		detailRows[i] = true
	}
	rows := make([]int, 0, len(detailRows))
	for r := range detailRows {
		rows = append(rows, r)
	}
	sort.Ints(rows)
	refs, err := eventsAt(rows)
	if err != nil {
		return err
	}
	if err := addDetails(d, logs, refs, rows, o); err != nil {
		return err
	}
	for i := range d.Details {
		d.Timeline.Rows[d.Details[i].Row][5] |= 2
	}
	// the sentences, the findings worst first, the first screen's story
	tell(d, logs, o)
	if len(d.Timeline.Rows) > len(d.Details) {
		d.Notes = append(d.Notes, fmt.Sprintf("payloads and wire bytes are embedded for %d of %d events (the findings' events and chains first, then the earliest); the others are in the event log and its cassette", len(d.Details), d.Timeline.Total))
	}

	if run != nil && run.compact {
		d.Graph = run.pic.draw(lanes, o)
		run.pic = nil
	} else {
		d.Graph = layout(run, logs, lanes, laneAt, o)
	}
	if o.FirewallAudit != "" {
		fw, err := auditChecks(o.FirewallAudit, o.AuditOptions)
		if err != nil {
			return err
		}
		d.Firewall = fw
	}
	return nil
}

// eventLinks are the events e links to.
func eventLinks(e *eventlog.Event) []string {
	var out []string
	for _, l := range []string{e.Call, e.Input, e.Cause, e.During, e.Concerns} {
		if l != "" {
			out = append(out, l)
		}
	}
	return append(out, e.DuringCandidates...)
}

// linkTable is what the first pass keeps of the events' links: for each
// event id, the links of the last event of that id that has links (what a
// map from id to links, set event by event, would hold), without a map
// entry per event. An event whose id is "e<row>" (the writer's rule)
// and whose links all have that form keeps them as row numbers; the
// others (imported, repeated or odd ids) go to a map. At 1M events the
// map from id to links was the first pass's largest live heap.
type linkTable struct {
	end []uint32 // per row: where its links end in to (they start where the row before's end)
	to  []int32
	odd map[string]oddLinks
}

type oddLinks struct {
	row   int
	links []string
}

// rowOfID is n when id is "e<n>" written as the writer writes it (no
// sign, no leading zero) and n fits an int32.
func rowOfID[T string | []byte](id T) (int, bool) {
	if len(id) < 2 || len(id) > 11 || id[0] != 'e' || (id[1] == '0' && len(id) > 2) {
		return 0, false
	}
	n := 0
	for i := 1; i < len(id); i++ {
		c := id[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return n, true
}

// add records the links of the event at row (rows come in order, from 0).
func (t *linkTable) add(row int, id string, links []string) {
	if len(links) > 0 {
		if n, ok := rowOfID(id); ok && n == row && t.addRows(links) {
			t.end = append(t.end, uint32(len(t.to)))
			return
		}
		if t.odd == nil {
			t.odd = map[string]oddLinks{}
		}
		t.odd[id] = oddLinks{row, links}
	}
	t.end = append(t.end, uint32(len(t.to)))
}

// addRows appends links to to if they all have the form "e<n>".
func (t *linkTable) addRows(links []string) bool {
	start := len(t.to)
	for _, l := range links {
		n, ok := rowOfID(l)
		if !ok || uint64(len(t.to)) >= math.MaxUint32 {
			t.to = t.to[:start]
			return false
		}
		t.to = append(t.to, int32(n))
	}
	return true
}

// lookup returns the links recorded for id (nil when none).
func (t *linkTable) lookup(id string) []string {
	var best []string
	bestRow := -1
	if o, ok := t.odd[id]; ok {
		best, bestRow = o.links, o.row
	}
	if n, ok := rowOfID(id); ok && n < len(t.end) && n > bestRow {
		start := uint32(0)
		if n > 0 {
			start = t.end[n-1]
		}
		if t.end[n] > start {
			out := make([]string, 0, t.end[n]-start)
			for _, m := range t.to[start:t.end[n]] {
				out = append(out, "e"+strconv.Itoa(int(m)))
			}
			return out
		}
	}
	return best
}

// closure is the part of the table chainEvents can reach from start: the
// links of every event reachable from them (all of them, so chainEvents
// gives what it gives on the whole table, whatever order it walks in).
func (t *linkTable) closure(start []string) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	queue := []string{}
	for _, ev := range start {
		if !seen[ev] {
			seen[ev] = true
			queue = append(queue, ev)
		}
	}
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		l := t.lookup(ev)
		if len(l) == 0 {
			continue
		}
		out[ev] = l
		for _, x := range l {
			if !seen[x] {
				seen[x] = true
				queue = append(queue, x)
			}
		}
	}
	return out
}
