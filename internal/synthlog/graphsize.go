package synthlog

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/mcp"
)

// GraphSession is the session id of the logs NewGraph and WriteGraph
// generate.
const GraphSession = "bench"

// BusiestTool is the tool NewGraph's logs call most; removing its
// definition removes every call of it.
const BusiestTool = "read_file"

var graphTools = []eventlog.ToolDef{
	{Name: "read_file", SHA256: "01", Annotations: json.RawMessage(`{"idempotentHint":true,"readOnlyHint":true}`)},
	{Name: "write_file", SHA256: "02", Annotations: json.RawMessage(`{"destructiveHint":false,"idempotentHint":true}`)},
	{Name: "delete_file", SHA256: "03", Annotations: json.RawMessage(`{"destructiveHint":true}`)},
	{Name: "send_mail", SHA256: "04", Annotations: json.RawMessage(`{"idempotentHint":false}`)},
	{Name: "search", SHA256: "05"},
}

var graphOps = map[string]string{"read_file": "read", "write_file": "overwrite", "delete_file": "delete", "send_mail": "send", "search": "read"}

// GraphSource yields the events of a log whose graph has about targetNodes
// nodes (for replay's benchmarks, make bench): model turns that ask for one
// to three tool calls, results, external effects of several ops (some
// irreversible), tools with MCP annotations, and agent messages derived
// from results of earlier turns, so that the dependency graph has shared
// descendants as real runs do. It assigns ids and sessions itself (as
// eventlog.Writer would), so graph.Build can read it directly.
type GraphSource struct {
	target  int
	nodes   int
	seq     int64
	rng     *rand.Rand
	queue   []*eventlog.Event
	results []string // result event ids, for message causes
	done    bool
}

// NewGraph returns a generator for about targetNodes graph nodes.
func NewGraph(targetNodes int) *GraphSource {
	return &GraphSource{target: targetNodes, rng: rand.New(rand.NewPCG(42, 1))}
}

const graphTS = "2026-08-30T14:33:00+00:00"

func (s *GraphSource) emit(e *eventlog.Event, nodes int) {
	e.V = eventlog.FormatVersion
	e.Seq = s.seq
	e.ID = eventlog.EventID(s.seq)
	e.Session = GraphSession
	e.TS = graphTS
	if e.Source == "" {
		e.Source = eventlog.SourceObserved
	}
	s.seq++
	s.nodes += nodes
	s.queue = append(s.queue, e)
}

// Next returns the next event, io.EOF at the end.
func (s *GraphSource) Next() (*eventlog.Event, error) {
	for len(s.queue) == 0 {
		if s.done {
			return nil, io.EOF
		}
		s.fill()
	}
	e := s.queue[0]
	s.queue = s.queue[1:]
	return e, nil
}

func (s *GraphSource) fill() {
	if s.seq == 0 {
		s.emit(&eventlog.Event{Kind: eventlog.KindSessionStart, Header: &eventlog.Header{
			Format: "witness-events", WitnessVersion: "bench", Pairing: "jsonrpc-id",
			Seal:   &eventlog.SealRef{Digest: "9edc4d89189a690d3e379381523729807a48b325f9b14329a2f25874507fd8d2", WitnessID: "bench"},
			Server: &eventlog.ServerInfo{Name: "bench", Tools: graphTools},
		}}, 6+len(graphTools))
		return
	}
	if s.nodes >= s.target {
		s.done = true
		return
	}
	r := s.rng
	in := eventlog.EventID(s.seq)
	s.emit(&eventlog.Event{Kind: eventlog.KindModelInput, Role: "user", Payload: json.RawMessage(`"go on"`), Source: eventlog.SourceReported}, 1)
	out := eventlog.EventID(s.seq)
	s.emit(&eventlog.Event{Kind: eventlog.KindModelOutput, Role: "assistant", Input: in, Payload: json.RawMessage(`"ok"`), Source: eventlog.SourceReported}, 3)
	calls := 1 + r.IntN(3)
	for k := 0; k < calls; k++ {
		tool := graphTools[0].Name
		if r.IntN(2) == 0 {
			tool = graphTools[1+r.IntN(len(graphTools)-1)].Name
		}
		call := eventlog.EventID(s.seq)
		rpc := json.RawMessage(fmt.Sprint(s.seq))
		s.emit(&eventlog.Event{Kind: eventlog.KindToolCall, Tool: tool, Method: mcp.MethodToolsCall, RPCID: rpc, Cause: out,
			Payload: json.RawMessage(fmt.Sprintf(`{"path":"/data/f%d"}`, r.IntN(1000)))}, 3)
		s.results = append(s.results, eventlog.EventID(s.seq))
		s.emit(&eventlog.Event{Kind: eventlog.KindToolResponse, Tool: tool, Method: mcp.MethodToolsCall, RPCID: rpc, Call: call, Payload: json.RawMessage(`{"content":[]}`)}, 1)
		if op := graphOps[tool]; op != "read" || r.IntN(4) == 0 {
			s.emit(&eventlog.Event{Kind: eventlog.KindExternalEffect, Tool: tool, Call: call,
				Effect: &eventlog.Effect{Op: op, Target: fmt.Sprintf("/data/f%d", r.IntN(1000))}}, 1)
		}
	}
	if r.IntN(5) == 0 && len(s.results) > 1 {
		// an agent message derived from a result of a recent turn
		back := len(s.results) - 1 - r.IntN(min(len(s.results), 50))
		s.emit(&eventlog.Event{Kind: eventlog.KindMessage, Cause: s.results[back], Source: eventlog.SourceReported,
			Message: &eventlog.Message{Direction: "outgoing", Conversation: "c", Sender: "a", Text: "fyi", Operation: "direct"}}, 1)
	}
	if len(s.results) > 200 {
		s.results = append([]string(nil), s.results[len(s.results)-50:]...)
	}
}

// WriteGraph writes the log of about targetNodes graph nodes to w, one
// canonical line per event (docs/formats/events.md).
func WriteGraph(w io.Writer, targetNodes int) error {
	src := NewGraph(targetNodes)
	cw := eventlog.NewWriter(w, GraphSession)
	for {
		e, err := src.Next()
		if err == io.EOF {
			return nil
		}
		e.ID, e.Session, e.V, e.Seq, e.Prev = "", "", 0, 0, ""
		if err := cw.Append(e); err != nil {
			return err
		}
	}
}
