package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/firewall"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/verify"
)

// format is the format name of the embedded data (docs/formats/report.md).
const format = "witness-report"

// Defaults of the size limits (docs/design/report.md says why).
const (
	DefaultMaxTimeline   = 2000   // events drawn one by one; above, the timeline shows buckets
	defaultBuckets       = 120    // buckets of an aggregated timeline
	DefaultMaxDetails    = 2000   // events whose payload and wire bytes are embedded
	defaultMaxExcerpt    = 4096   // bytes kept of one payload or one wire excerpt
	DefaultMaxGraphNodes = 300    // graph nodes drawn one by one; above, a summary per time window
	defaultGraphWindows  = 24     // time windows of a summarised graph
	defaultTopRank       = 10     // blast-radius ranking entries
	maxFindings          = 500    // findings shown with their chain
	maxWhatIfEffects     = 20     // not-replayable nodes named per finding's what-if
	maxEventRows         = 200000 // event rows embedded (the list is virtualised)
)

// Options say what to report on and how big the page may grow.
type Options struct {
	// Events are the event logs of one run (at least one): the model
	// channel and one log per MCP server. They are judged as one run, as
	// `witness verify --events A --events B` does (verify.Options.RunEvents),
	// each log's own integrity is shown beside, the graph is their join
	// (graph.BuildRun) and the timeline merges them in log order.
	Events []string
	// Verify is the template of the verification (seal file, keys,
	// AllowUnsigned); Build sets EventsFile and RunEvents. Without a
	// SealFile the logs are checked for integrity only.
	Verify verify.Options
	// FirewallAudit is an audit snapshot verified with AuditKeys.
	FirewallAudit string
	AuditOptions  firewall.AuditVerifyOptions
	// Explainer gives each finding's causal chain (default WhyExplainer).
	Explainer Explainer
	// Generated is the generation time printed in the page ("" for none).
	Generated string
	// Version is the witness version printed in the page.
	Version string

	MaxTimeline, Buckets, MaxDetails, MaxExcerpt, MaxGraphNodes, GraphWindows, TopRank int

	// CompactAbove: a single log of more events than this is reported
	// from compact projections of its streamed graph, not the whole graph
	// in memory (0: DefaultCompactAbove; negative: always).
	CompactAbove int
	// Stream is the external sort of the compact path's graph stream
	// (graph.StreamOptions; zero: its defaults).
	Stream graph.StreamOptions
	// graphOpts: the options of the single log's graph (the picture,
	// the chains, the stream's digest): with a usable seal, the seal as
	// the session's plan, the graph whose digest verify gives
	// (verify.GraphOptionsFor), so that the page shows the graph its
	// verdict names and verify does not stream the log a second time
	graphOpts graph.Options
	// readsLog: the page's first pass and the graph stream read the log
	// file themselves instead of the events verify.Run decoded (tests
	// compare the two: TestTapSameAsReaders)
	readsLog bool
}

func (o *Options) defaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.MaxTimeline, DefaultMaxTimeline)
	def(&o.Buckets, defaultBuckets)
	def(&o.MaxDetails, DefaultMaxDetails)
	def(&o.MaxExcerpt, defaultMaxExcerpt)
	def(&o.MaxGraphNodes, DefaultMaxGraphNodes)
	def(&o.GraphWindows, defaultGraphWindows)
	def(&o.TopRank, defaultTopRank)
	if o.Explainer == nil {
		o.Explainer = WhyExplainer{}
	}
}

// Data is everything the page shows, embedded as one JSON value.
type Data struct {
	Format    string    `json:"format"`
	V         int       `json:"v"`
	Generated string    `json:"generated,omitempty"`
	Version   string    `json:"version,omitempty"`
	Verdict   Verdict   `json:"verdict"`
	Logs      []Log     `json:"logs"`
	Lanes     []string  `json:"lanes"`
	Kinds     []string  `json:"kinds"`
	Labels    []string  `json:"labels"`
	Timeline  Timeline  `json:"timeline"`
	Details   []Detail  `json:"details"`
	Findings  []Finding `json:"findings"`
	Graph     Picture   `json:"graph"`
	Rank      []Ranked  `json:"rank"`
	Firewall  *Firewall `json:"firewall,omitempty"`
	Notes     []string  `json:"notes,omitempty"`
	// Story is the first screen: the worst finding's chain and what the
	// findings touched (story.go).
	Story story `json:"story"`
	// RunChecks are the checks of the run when several logs are judged
	// as one (each log's own are in Logs).
	RunChecks []Check `json:"run_checks,omitempty"`
}

// Verdict is the run's verdict (one verify.Run of all the logs), or a
// log's own when that is worse.
type Verdict struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Class    string `json:"class"` // the exit class name (ok, violation, tampered...)
	Line     string `json:"line"`
}

// Log is one event log: its verification and its integrity.
type Log struct {
	File       string   `json:"file"`
	Session    string   `json:"session,omitempty"`
	Server     string   `json:"server,omitempty"`
	Events     int      `json:"events"`
	Verdict    string   `json:"verdict"`
	ExitCode   int      `json:"exit_code"`
	Line       string   `json:"line"`
	Qualifiers []string `json:"qualifiers,omitempty"`
	Seal       string   `json:"seal,omitempty"`
	Signers    []string `json:"signers,omitempty"`
	Provenance string   `json:"provenance,omitempty"`
	Checks     []Check  `json:"checks"`
	EndSigned  []string `json:"end_signed_by,omitempty"` // key ids on the session end
	Cassette   string   `json:"cassette,omitempty"`
	ReadError  string   `json:"read_error,omitempty"`
}

// Check is one verify check and its status.
type Check struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Timeline holds one row per event: [log, seq, lane, kind, label, flags]
// (indexes into Lanes, Kinds and Labels; flags bit 0: a finding names the
// event, bit 1: its details are embedded), in log order, logs merged by
// time. Above MaxTimeline events, Buckets aggregates them:
// Buckets[lane][b] counts the rows of lane in bucket b (Size rows each).
type Timeline struct {
	Rows    [][6]int64 `json:"rows"`
	Total   int        `json:"total"`
	Size    int        `json:"bucket_size,omitempty"`
	Buckets [][]int    `json:"buckets,omitempty"`
}

// Detail is what the page shows for one event: its payload, sha256 and
// the exact wire bytes from the cassette, each cut at MaxExcerpt bytes
// with a note.
type Detail struct {
	Row      int    `json:"row"`
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	TS       string `json:"ts"`
	Source   string `json:"source,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Method   string `json:"method,omitempty"`
	RPCID    string `json:"rpc_id,omitempty"`
	Links    string `json:"links,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Payload  string `json:"payload,omitempty"`
	PayloadN int    `json:"payload_bytes,omitempty"`
	Wire     string `json:"wire,omitempty"`
	WireN    int    `json:"wire_bytes,omitempty"`
	WireNote string `json:"wire_note,omitempty"`
}

// Finding is one verify finding with its chain and counterfactual.
type Finding struct {
	Log      int    `json:"log"`
	Code     string `json:"code"`
	Class    string `json:"class"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Event    string `json:"event,omitempty"`
	Row      int    `json:"row"` // timeline row of the event, -1 for none
	Tool     string `json:"tool,omitempty"`
	Chain    *Chain `json:"chain,omitempty"`
	// ChainRows are the timeline rows of the chain's steps (-1 for none).
	ChainRows []int  `json:"chain_rows,omitempty"`
	ChainNote string `json:"chain_note,omitempty"`
	Removing  *What  `json:"removing,omitempty"`
	// Sentence says what went wrong in one sentence, made from the
	// finding's events (story.go).
	Sentence string `json:"sentence"`

	vf verify.Finding // the finding as verify gave it
}

// What is what removing a finding's cause changes (replay).
type What struct {
	Cause         string   `json:"cause"`
	Label         string   `json:"label"`
	Removed       int      `json:"removed"` // compensation set size
	Actions       int      `json:"actions"`
	OfActions     int      `json:"of_actions"`
	NotReplayable int      `json:"not_replayable"`
	Effects       []string `json:"effects,omitempty"`
	Residual      float64  `json:"synergy_residual"`
	Note          string   `json:"note,omitempty"`
}

// Ranked is one entry of replay's blast-radius ranking.
type Ranked struct {
	Log           int     `json:"log"`
	Rank          int     `json:"rank"`
	Activity      string  `json:"activity"`
	Label         string  `json:"label"`
	Tool          string  `json:"tool,omitempty"`
	Size          int64   `json:"compensation_size"`
	Activities    int64   `json:"compensation_activities"`
	NotReplayable int64   `json:"not_replayable"`
	Residual      float64 `json:"synergy_residual"`
}

// Firewall is the audit verification and its checks.
type Firewall struct {
	File     string       `json:"file"`
	Verdict  string       `json:"verdict"`
	Auth     string       `json:"authentication"`
	Complete bool         `json:"complete"`
	Checks   []AuditCheck `json:"checks"`
	More     int          `json:"more,omitempty"`
}

// AuditCheck is one check record of the audit.
type AuditCheck struct {
	Seq         int64  `json:"seq"`
	ID          string `json:"id"`
	Direction   string `json:"direction"`
	Operation   string `json:"operation"`
	Disposition string `json:"disposition"`
	Reason      string `json:"reason,omitempty"`
}

type logState struct {
	file     string
	events   []*eventlog.Event
	rep      *verify.Report   // the log's own verification (its integrity, with several logs)
	findings []verify.Finding // the run's findings about this log
	rowOf    map[string]int   // event id → timeline row
	server   string
	effects  []effectRec // the log's external effects, the first maxEffects
}

// runState is the run the logs make: its joined graph and which log each
// node comes from.
type runState struct {
	g    *graph.Graph // the whole graph; compact: the subgraph of the chains
	logs []graph.RunLog

	// a compact run (compactGraph) also holds what the scan kept
	compact bool
	primary map[string]string // event id → its node
	labels  map[string]string // activity IRI → label
	pic     *picture          // the picture's projection
	eng     *replay.Engine
	engErr  error
}

// label is the label of node iri, if the run knows it.
func (r *runState) label(iri string) (string, bool) {
	if n := r.g.Node(iri); n != nil {
		return graph.NodeLabel(n), true
	}
	l, ok := r.labels[iri]
	return l, ok
}

// logOf returns the index of the log node iri belongs to (0 with one log).
func (r *runState) logOf(iri string) int {
	if r == nil || len(r.logs) < 2 {
		return 0
	}
	for i, l := range r.logs {
		if l.Base != "" && strings.HasPrefix(iri, l.Base+"/") {
			return i
		}
	}
	return -1
}

func findingScope(f verify.Finding) string {
	if f.SealClause != "" || f.Check == verify.CheckSeal {
		return "seal"
	}
	return "log"
}

func rank(v verify.Verdict) int {
	switch v {
	case verify.Tampered:
		return 4
	case verify.Incomplete:
		return 3
	case verify.Unauthenticated:
		return 2
	case verify.Violation:
		return 1
	}
	return 0
}

// interner numbers strings in first-seen order.
type interner struct {
	list []string
	ix   map[string]int
}

func newInterner() *interner { return &interner{ix: map[string]int{}} }

func (t *interner) id(s string) int {
	if i, ok := t.ix[s]; ok {
		return i
	}
	t.ix[s] = len(t.list)
	t.list = append(t.list, s)
	return len(t.list) - 1
}

// serverLane names the lane of an MCP server's messages: "fs server",
// or "MCP server" for a server the log does not name.
func serverLane(server string) string {
	if server == "" {
		return "MCP server"
	}
	return server + " server"
}

// laneOf is the actor lane of an event, its server's named by serverLane.
func laneOf(e *eventlog.Event, server string) string {
	if k := laneKind(e); k != "server" {
		return k
	}
	return serverLane(server)
}

// laneKind is the kind of actor lane of an event: user, agent, model,
// server, effects or witness.
func laneKind(e *eventlog.Event) string {
	s2c := e.Direction == "s2c"
	switch e.Kind {
	case eventlog.KindUserInput:
		return "user"
	case eventlog.KindToolCall:
		return "agent"
	case eventlog.KindToolResponse, eventlog.KindMCPResponse:
		if e.Kind == eventlog.KindMCPResponse && !s2c && e.Direction != "" {
			return "agent"
		}
		return "server"
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		return "model"
	case eventlog.KindExternalEffect:
		return "effects"
	case eventlog.KindMCPRequest, eventlog.KindNotification:
		if s2c {
			return "server"
		}
		if e.Direction == "c2s" {
			return "agent"
		}
		return "witness"
	case eventlog.KindMessage:
		return "agent"
	}
	return "witness"
}

// eventLabel is the short text of a timeline row.
func eventLabel(e *eventlog.Event) string {
	switch {
	case e.Tool != "":
		return e.Tool
	case e.Effect != nil:
		return e.Effect.Op
	case e.Method != "":
		return e.Method
	case e.Role != "":
		return e.Role
	}
	return string(e.Kind)
}

// primaryNode is the node an event id of log li names (replay's rule: the
// activity, else the first entity).
func primaryNode(run *runState, li int, ev string) string {
	if run.compact {
		return run.primary[ev]
	}
	var ent string
	for _, n := range run.g.Nodes {
		if n.Value(graph.WEventID) != ev || run.logOf(n.ID) != li {
			continue
		}
		switch graph.DrawKind(n) {
		case "activity":
			return n.ID
		case "entity":
			if ent == "" {
				ent = n.ID
			}
		}
	}
	return ent
}

// whatIf removes the chain's first removable cause and says what goes with
// it.
func whatIf(eng *replay.Engine, run *runState, c *Chain) *What {
	for _, s := range c.Steps {
		if s.Kind != "activity" {
			continue
		}
		// the counts of the counterfactual and its first not-replayable
		// members: a report asks this of up to maxFindings chains, so it
		// costs the compensation set, not the graph (replay.Impact)
		r, err := eng.Impact([]string{s.Node}, maxWhatIfEffects)
		if err != nil {
			continue
		}
		w := &What{Cause: s.Node, Label: s.Label, Removed: r.CompensationSize, Actions: r.CompensationActions, OfActions: r.Actions,
			NotReplayable: r.NotReplayable, Residual: r.SynergyResidual}
		for _, e := range r.FirstNotReplayable {
			t := e.Op
			if e.Target != "" {
				t += " " + e.Target
			}
			if t == "" {
				t = e.Node
				if l, ok := run.label(e.Node); ok {
					t = strings.ReplaceAll(l, "\n", " ")
				}
			}
			if len(e.Reasons) > 0 {
				t += " (" + strings.Join(e.Reasons, "; ") + ")"
			}
			w.Effects = append(w.Effects, t)
		}
		if r.NotReplayable > len(w.Effects) {
			w.Note = fmt.Sprintf("%d more not-replayable nodes", r.NotReplayable-len(w.Effects))
		}
		return w
	}
	return nil
}

// readEvents reads a whole log; on a bad line it returns what came before
// and the error.
func readEvents(file string) ([]*eventlog.Event, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, exitcode.Input("read events", err, "check the path given to --events")
	}
	defer f.Close()
	r := eventlog.NewReader(f, file)
	var out []*eventlog.Event
	for {
		e, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, exitcode.New(exitcode.Tampered, err, "")
		}
		out = append(out, e)
	}
}

// checkInput refuses an input that cannot be read before any work.
func checkInput(path, flag string) error {
	f, err := os.Open(path)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.IsDir() {
			err = &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
		}
		f.Close()
	}
	if err != nil {
		what := "read events"
		if flag == "--firewall-audit" {
			what = "read audit"
		}
		return exitcode.Input(what, err, "check the path given to "+flag)
	}
	return nil
}
