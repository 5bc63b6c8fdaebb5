// Package why answers "why did this happen" on a witness graph: the causal
// chain of a node back to its sources (the model turns, tool results,
// resources and user inputs it depended on), across the channels of a
// joined run (graph.BuildRun; docs/design/causal-join.md). It reads the
// graph only.
package why

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/modelapi"
)

// Options tune Explain.
type Options struct {
	// Logs are the logs of the run (graph.Run.Logs): they resolve
	// LOGNAME:eN and name each step's log. Without them, the graph's
	// session nodes (witness:logName) are used.
	Logs []graph.RunLog
	// MaxSteps bounds the chain (default 1000).
	MaxSteps int
}

// Step is one node of a chain.
type Step struct {
	Event   string `json:"event"`           // the event id ("e7", "e4#0" for a model output's first tool call)
	Log     string `json:"log,omitempty"`   // the log's LOGNAME ("" with one unnamed log)
	Kind    string `json:"kind"`            // tool_call, tool_response, model_input, model_turn, model_tool_call, ...
	IRI     string `json:"iri"`             // the graph node
	Excerpt string `json:"excerpt"`         // at most 80 characters
	Via     string `json:"via,omitempty"`   // the relation that led here from an earlier step (prov:used, ...)
	From    string `json:"from,omitempty"`  // the IRI of that earlier step
	Maybe   bool   `json:"maybe,omitempty"` // reached through an ambiguous join (witness:possiblyInfluencedBy)
}

// Ref is the printed reference of a step: LOG:EVENT, or EVENT.
func (s Step) Ref() string {
	if s.Log == "" {
		return s.Event
	}
	return s.Log + ":" + s.Event
}

// Chain is the answer: the node asked about first, then every node it
// depends on, nearest first; Sources are the steps where content entered
// the run (tool results, resource contents, user inputs, and the first
// inputs, which depend on nothing recorded).
type Chain struct {
	Node    string   `json:"node"`
	Chain   []Step   `json:"chain"`
	Sources []string `json:"sources"`
	// NoSources says why Sources is empty: the run has no model channel
	// , or nothing recorded led to the node.
	NoSources string `json:"no_sources,omitempty"`
}

// The reasons of Chain.NoSources.
const (
	noModelChannel = "this run has no model channel, so nothing recorded says what asked for it (record the model API with 'witness proxy --listen ADDR --upstream URL' and give its log with --events)"
	noCause        = "no model turn of this run asked for it and it used nothing recorded"
)

// causal are the predicates a chain follows, in the order they are tried.
var causal = []string{graph.ProvWasInformedBy, graph.ProvUsed, graph.ProvWasDerivedFrom, graph.ProvWasGeneratedBy, graph.ProvWasInfluencedBy, graph.WPossiblyInfluencedBy}

// Explain returns the causal chain of node: a graph IRI, an event id
// qualified by its log (LOGNAME:e7) or a bare event id when only one log
// has it. An unknown or ambiguous node is a usage error (exit 2).
func Explain(g *graph.Graph, node string, opts Options) (*Chain, error) {
	return explain(g, node, opts, hasModel(g))
}

// hasModel reports whether g holds a model channel's nodes.
func hasModel(g *graph.Graph) bool {
	return len(g.OfType(graph.WModelTurn)) > 0 || len(g.OfType(graph.WModelMessage)) > 0
}

// explain is Explain, told whether the run has a model channel (the
// whole graph's, which a subgraph cannot say).
func explain(g *graph.Graph, node string, opts Options, model bool) (*Chain, error) {
	logs := opts.Logs
	if len(logs) == 0 {
		logs = LogsOf(g)
	}
	start, err := Resolve(g, node, logs)
	if err != nil {
		return nil, err
	}
	max := opts.MaxSteps
	if max <= 0 {
		max = 1000
	}
	ch := &Chain{Node: node, Chain: []Step{}, Sources: []string{}}
	edges := func(iri string, fn func(to, pred string)) {
		n := g.Node(iri)
		for _, p := range causal {
			refs := n.Refs(p)
			sort.Strings(refs)
			for _, r := range refs {
				if t := g.Node(r); t != nil && followed(t) {
					fn(r, p)
				}
			}
		}
	}
	isNode := func(iri string) bool { return g.Node(iri) != nil }
	isTransparent := func(iri string) bool { return transparent(g.Node(iri)) }
	walk(start, max, isNode, isTransparent, edges, func(it walkItem[string], deps int) {
		st := step(g, g.Node(it.at), logs)
		st.Via, st.From, st.Maybe = it.via, it.from, it.maybe
		ch.Chain = append(ch.Chain, st)
		if deps == 0 || isSource(st.Kind) {
			ch.Sources = append(ch.Sources, st.Ref())
		}
	})
	if len(ch.Sources) == 0 {
		ch.NoSources = noCause
		if !model {
			ch.NoSources = noModelChannel
		}
	}
	return ch, nil
}

// walkItem is a node on the walk's queue: the relation that reached it
// (compacted) from the printed step from.
type walkItem[K comparable] struct {
	at, from K
	via      string
	maybe    bool
}

// walk is Explain's breadth-first walk from start, over node keys K (IRIs
// on a *graph.Graph, interned numbers on a causal index): isNode says
// whether a key is a node of the graph, isTransparent whether a node is
// walked through without being printed, edges gives a node's followed
// targets (nodes that are not context), predicate by predicate in causal's
// order and sorted within one. printed is called for each printed step, at
// most max times, with the number of its followed targets. One walk for
// both, so that the nodes a causal index keeps are the nodes Explain reads.
func walk[K comparable](start K, max int, isNode, isTransparent func(K) bool, edges func(K, func(to K, pred string)), printed func(it walkItem[K], deps int)) {
	seen := map[K]bool{start: true}
	queue := []walkItem[K]{{at: start}}
	steps := 0
	for len(queue) > 0 && steps < max {
		it := queue[0]
		queue = queue[1:]
		if !isNode(it.at) {
			continue
		}
		through := isTransparent(it.at) && it.at != start
		// children of a transparent node hang from the printed step that
		// led to it
		from := it.at
		if through {
			from = it.from
		}
		deps := 0
		edges(it.at, func(to K, pred string) {
			deps++
			if seen[to] {
				return
			}
			seen[to] = true
			queue = append(queue, walkItem[K]{at: to, via: compact(pred), from: from, maybe: it.maybe || pred == graph.WPossiblyInfluencedBy})
		})
		if through {
			continue
		}
		steps++
		printed(it, deps)
	}
}

// followed reports whether a chain goes on to node t: not to definitions,
// plans, agents and the capture session, which are context, not causes.
func followed(t *graph.Node) bool { return followedTypes(t.Types) }

// followedTypes is followed on a node's types.
func followedTypes(types []string) bool {
	for _, ty := range types {
		switch ty {
		case graph.WToolDefinition, graph.ProvPlan, graph.ProvAgent, graph.ProvAssociation, graph.WCaptureSession:
			return false
		}
	}
	return true
}

// transparent nodes are walked through but not printed: arguments and
// request params (their call is printed).
func transparent(n *graph.Node) bool {
	return n.HasType(graph.WArguments) || n.HasType(graph.WRequestParams)
}

func isSource(kind string) bool {
	switch kind {
	case "tool_response", "mcp_response", "user_input":
		return true
	}
	return false
}

func compact(p string) string {
	for _, ns := range []struct{ p, n string }{{"prov:", graph.NSProv}, {"witness:", graph.NSWitness}} {
		if strings.HasPrefix(p, ns.n) {
			return ns.p + p[len(ns.n):]
		}
	}
	return p
}

// LogsOf reads the logs of a joined graph from its session nodes
// (witness:logName); a graph of one log has none.
func LogsOf(g *graph.Graph) []graph.RunLog {
	var out []graph.RunLog
	for _, n := range g.OfType(graph.WCaptureSession) {
		name := n.Value(graph.WLogName)
		if name == "" {
			continue
		}
		out = append(out, graph.RunLog{Name: name, Label: name, Session: n.Value(graph.WSession), SHA256: n.Value(graph.WLogSHA256),
			Base: strings.TrimSuffix(n.ID, "/session")})
	}
	return out
}

// logOf returns the LOGNAME of the log whose base holds iri.
func logOf(iri string, logs []graph.RunLog) string {
	for _, l := range logs {
		if l.Base != "" && strings.HasPrefix(iri, l.Base+"/") {
			return l.Label
		}
	}
	return ""
}

// Resolve returns the IRI of the node ref names: a graph IRI, LOGNAME:eN,
// or a bare event id only one log has; logs nil reads them from the graph.
// An unknown or ambiguous ref is a usage error (exit 2) whose hint lists
// the logs or the qualified candidates.
func Resolve(g *graph.Graph, ref string, logs []graph.RunLog) (string, error) {
	if logs == nil {
		logs = LogsOf(g)
	}
	if g.Node(ref) != nil {
		return ref, nil
	}
	_, id := splitRef(ref)
	var cands []string
	for _, n := range g.Nodes {
		if n.Value(graph.WEventID) == id {
			cands = append(cands, n.ID)
		}
	}
	return resolveAmong(ref, cands, logs)
}

// splitRef splits LOGNAME:eN at its last colon; a ref without one has no
// log name.
func splitRef(ref string) (logName, id string) {
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	return "", ref
}

// resolveAmong is Resolve once ref is known not to be a node's IRI: cands
// are the IRIs of the nodes whose event id is ref's, in ID order.
func resolveAmong(ref string, cands []string, logs []graph.RunLog) (string, error) {
	logName, id := splitRef(ref)
	var hits []string
	for _, c := range cands {
		if logName != "" {
			ok := false
			for _, l := range logs {
				if (l.Label == logName || l.Name == logName) && strings.HasPrefix(c, l.Base+"/") {
					ok = true
				}
			}
			if !ok {
				continue
			}
		}
		hits = append(hits, c)
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		var names []string
		for _, l := range logs {
			names = append(names, l.Label)
		}
		hint := "give an event id of the log (e7), qualified by its log when several are given (LOGNAME:e7), or a node IRI from 'witness graph'"
		if len(names) > 0 {
			hint += "; the logs are " + strings.Join(names, ", ")
		}
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("unknown node %q", ref), hint)
	}
	var qual []string
	for _, h := range hits {
		qual = append(qual, logOf(h, logs)+":"+id)
	}
	return "", exitcode.New(exitcode.Usage, fmt.Errorf("node %q is ambiguous: %d logs have event %s", ref, len(hits), id),
		"qualify it by its log: "+strings.Join(qual, ", "))
}

// step describes node n.
func step(g *graph.Graph, n *graph.Node, logs []graph.RunLog) Step {
	st := Step{IRI: n.ID, Log: logOf(n.ID, logs), Event: n.Value(graph.WEventID)}
	switch {
	case n.HasType(graph.WToolCall):
		st.Kind = "tool_call"
		args := ""
		for _, u := range n.Refs(graph.ProvUsed) {
			if a := g.Node(u); a != nil && a.HasType(graph.WArguments) {
				args = a.Value(graph.ProvValue)
			}
		}
		st.Excerpt = n.Value(graph.OtelToolName) + " " + args
	case n.HasType(graph.WResult):
		st.Kind = "tool_response"
		st.Excerpt = resultText(n.Value(graph.ProvValue))
	case n.HasType(graph.WModelToolCall):
		st.Kind = "model_tool_call"
		st.Event = pathEvent(n.ID, "/msg/", "/tool-call/")
		st.Excerpt = n.Value(graph.OtelToolName) + " " + n.Value(graph.ProvValue)
	case n.HasType(graph.WModelTurn):
		st.Kind = "model_turn"
		st.Event = pathEvent(n.ID, "/turn/", "")
		if i := strings.LastIndex(n.ID, "/turn/"); i >= 0 {
			if out := g.Node(n.ID[:i] + "/msg/" + n.ID[i+len("/turn/"):]); out != nil {
				st.Excerpt = modelText(out.Value(graph.ProvValue), true)
			}
		}
	case n.HasType(graph.WModelMessage):
		st.Kind = "model_input"
		if len(n.Refs(graph.ProvWasGeneratedBy)) > 0 {
			st.Kind = "model_output"
		}
		st.Excerpt = modelText(n.Value(graph.ProvValue), st.Kind == "model_output")
	case n.HasType(graph.WMCPAnswer):
		st.Kind = "mcp_response"
		st.Excerpt = n.Value(graph.ProvValue)
	case n.HasType(graph.WMCPRequest):
		st.Kind = "mcp_request"
		st.Excerpt = n.Value(graph.OtelMCPMethodName) + " " + n.Value(graph.OtelMCPResourceURI)
	case n.HasType(graph.WUserInput):
		st.Kind = "user_input"
		st.Excerpt = n.Value(graph.ProvValue)
	case n.HasType(graph.WExternalEffect):
		st.Kind = "external_effect"
		st.Excerpt = n.Value(graph.WEffectOp) + " " + n.Value(graph.WEffectTarget)
	case n.HasType(graph.WNotification):
		st.Kind = "notification"
		st.Excerpt = n.Value(graph.OtelMCPMethodName)
	case n.HasType(graph.WAgentMessage):
		st.Kind = "message"
		st.Excerpt = n.Value(graph.WText)
	default:
		st.Kind = "node"
	}
	if st.Event == "" {
		st.Event = n.ID
	}
	st.Excerpt = excerpt(st.Excerpt)
	return st
}

// pathEvent returns the event id in an IRI after marker ("/turn/e4" ->
// "e4"), with "#i" for the i-th tool call ("/msg/e4/tool-call/0" ->
// "e4#0").
func pathEvent(iri, marker, sub string) string {
	i := strings.LastIndex(iri, marker)
	if i < 0 {
		return ""
	}
	rest := iri[i+len(marker):]
	idx := ""
	if sub != "" {
		if j := strings.Index(rest, sub); j >= 0 {
			rest, idx = rest[:j], "#"+rest[j+len(sub):]
		}
	}
	if u, err := url.PathUnescape(rest); err == nil {
		rest = u
	}
	return rest + idx
}

// resultText is the text items of a tool result, joined by spaces.
func resultText(v string) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(v), &r) != nil {
		return v
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		return v
	}
	return strings.Join(parts, " ")
}

// modelText is what a model message says: an output's text or tool calls,
// an input's last message (the user's request, or the tool result carried
// back).
func modelText(v string, output bool) string {
	if output {
		var o modelapi.Output
		if json.Unmarshal([]byte(v), &o) != nil {
			return v
		}
		if o.Text != "" {
			return o.Text
		}
		var calls []string
		for _, c := range o.ToolCalls {
			calls = append(calls, c.Name+" "+c.Arguments)
		}
		return strings.Join(calls, "; ")
	}
	var in modelapi.Input
	if json.Unmarshal([]byte(v), &in) != nil || len(in.Messages) == 0 {
		return v
	}
	last := in.Messages[len(in.Messages)-1]
	var b strings.Builder
	b.WriteString(last.Role + ": ")
	for _, p := range last.Parts {
		b.WriteString(p.Text)
		for _, c := range p.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// excerpt shortens s to one line of at most 80 characters.
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= 80 {
		return s
	}
	r := []rune(s)
	return string(r[:79]) + "…"
}

// errNoNode is returned by Path when no chain leads from one node to the
// other.
var errNoNode = errors.New("no causal path")

// Path returns the steps of c from its node back to the step with IRI to,
// following each step's From link: the one chain that shows why to reached
// the node (verify prints it with an injection-provenance finding).
func (c *Chain) Path(to string) ([]Step, error) {
	by := map[string]Step{}
	for _, s := range c.Chain {
		by[s.IRI] = s
	}
	s, ok := by[to]
	if !ok {
		return nil, errNoNode
	}
	var out []Step
	for guard := 0; guard <= len(c.Chain); guard++ {
		out = append(out, s)
		if s.From == "" {
			break
		}
		nx, ok := by[s.From]
		if !ok {
			break
		}
		s = nx
	}
	// nearest the asked node first
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// WriteText writes the chain: one line per step, then the sources.
func (c *Chain) WriteText(w interface{ Write([]byte) (int, error) }) error {
	var b strings.Builder
	fmt.Fprintf(&b, "why %s\n", c.Node)
	for i, s := range c.Chain {
		via := ""
		if i > 0 {
			via = "  <- " + s.Via
			if s.Maybe {
				via += " (ambiguous join)"
			}
		}
		fmt.Fprintf(&b, "  %-14s %-16s %s%s\n", s.Ref(), s.Kind, s.Excerpt, via)
	}
	if len(c.Sources) == 0 && c.NoSources != "" {
		fmt.Fprintf(&b, "sources: none: %s\n", c.NoSources)
	} else {
		fmt.Fprintf(&b, "sources: %s\n", strings.Join(c.Sources, ", "))
	}
	_, err := w.Write([]byte(b.String()))
	return err
}
