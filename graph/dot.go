package graph

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/mcp"
)

// DOTOptions tune WriteDOT.
type DOTOptions struct {
	// Classes colours nodes: node IRI → class. Known classes: violation,
	// tampered, incomplete, unauthenticated (verify's finding classes), warning, notice, removed, ambiguous, highlight; any other
	// class is drawn magenta. A class may also be given for an event id
	// ("e12"): it applies to that event's primary node.
	Classes map[string]string
	// MaxNodes is the largest number of drawn nodes; above it WriteDOT
	// draws a summary (default DefaultDOTMaxNodes).
	MaxNodes int
	// Title labels the picture.
	Title string
}

// DefaultDOTMaxNodes is where pictures become summaries: beyond a few
// hundred nodes Graphviz's dot takes minutes or runs out of memory, and no
// one can read the result.
const DefaultDOTMaxNodes = 400

// classStyle maps a finding class to a fill colour.
var classStyle = map[string]string{
	"violation":       "#e74c3c",
	"tampered":        "#8e44ad",
	"incomplete":      "#95a5a6",
	"unauthenticated": "#f1c40f",
	"warning":         "#f39c12",
	"notice":          "#5dade2",
	"removed":         "#d5d8dc",
	"ambiguous":       "#f5cba7",
	"highlight":       "#2ecc71",
}

// PROV's conventional styles: shape, fill and border colour.
var kindStyle = map[string][3]string{
	"entity":   {"ellipse", "#fffc87", "#808080"},
	"activity": {"box", "#9fb1fc", "#0000ff"},
	"agent":    {"house", "#fed37f", "#808080"},
}

func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// kindOf returns the drawing kind of a node: "activity", "entity", "agent",
// or "" for nodes folded into labels (associations, the session, tool
// definitions, the seal).
func kindOf(n *Node) string {
	switch {
	case n.HasType(ProvAssociation), n.HasType(WCaptureSession), n.HasType(WToolDefinition), n.HasType(ProvPlan):
		return ""
	case n.HasType(ProvAgent):
		return "agent"
	case n.HasType(ProvActivity):
		return "activity"
	case n.HasType(ProvEntity):
		return "entity"
	}
	return "entity"
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// nodeLabel is a short human label.
func nodeLabel(n *Node) string {
	ev := n.Value(WEventID)
	tool := n.Value(OtelToolName)
	switch {
	case n.HasType(WToolCall):
		l := "call " + tool
		if id := n.Value(otelJSONRPCRequestID); id != "" {
			l += "\nid " + id
		}
		return l + "\n" + ev
	case n.HasType(WArguments):
		return "args\n" + lastSegment(n.ID)
	case n.HasType(WResult):
		l := "result " + tool
		if n.Value(wIsError) == "true" {
			l += " (error)"
		}
		return l + "\n" + ev
	case n.HasType(wSamplingTurn):
		return "sampling turn (observed)\n" + lastSegment(n.ID)
	case n.HasType(WModelTurn):
		return "model turn\n" + lastSegment(n.ID)
	case n.HasType(WModelMessage):
		return messageLabel(n) + "\n" + ev
	case n.HasType(WMCPRequest):
		return requestLabel(n) + "\n" + ev
	case n.HasType(WRequestParams):
		return "params\n" + lastSegment(n.ID)
	case n.HasType(WMCPAnswer):
		return "answer " + shorten(n.Value(OtelMCPMethodName), 30) + errorMark(n) + "\n" + ev
	case n.HasType(WUserInput):
		l := "user input"
		if a := n.Value(wElicitationAction); a != "" {
			l += " " + shorten(a, 20)
		}
		return l + errorMark(n) + "\n" + ev
	case n.HasType(WExternalEffect):
		return "effect " + n.Value(WEffectOp) + "\n" + shorten(n.Value(WEffectTarget), 40) + "\n" + ev
	case n.HasType(WNotification):
		return shorten(n.Value(OtelMCPMethodName), 40) + "\n" + ev
	case n.HasType(WAmbiguousLine):
		return "AMBIGUOUS wire line\n" + ev
	case n.HasType(WAgentMessage):
		return "message " + shorten(n.Value(WSender), 20) + "\n" + ev
	case n.HasType(waiAgent):
		return "AI agent"
	case n.HasType(wUser):
		return "user"
	case n.HasType(wmcpServer):
		l := "MCP server"
		if s := n.Value(wServerName); s != "" {
			l += "\n" + shorten(s, 40)
		}
		return l
	case n.HasType(wWitness):
		return "witness " + n.Value(wWitnessVersion)
	}
	if ev != "" {
		return ev
	}
	return shorten(lastSegment(n.ID), 40)
}

// messageLabel names a model message: a sampling request or answer when
// observed on the wire, else its role.
func messageLabel(n *Node) string {
	if n.Value(OtelMCPMethodName) != mcp.MethodSamplingCreateMessage {
		return n.Value(WRole) + " message"
	}
	if n.Value(WDirection) == "s2c" {
		return "sampling request"
	}
	return "sampling answer" + errorMark(n)
}

// requestLabel names a request by its method and what it is about.
func requestLabel(n *Node) string {
	l := shorten(n.Value(OtelMCPMethodName), 30)
	if n.Value(WDirection) == "s2c" {
		l = "server: " + l
	}
	if t := n.Value(OtelMCPResourceURI); t != "" {
		l += "\n" + shorten(t, 40)
	} else if t := n.Value(otelPromptName); t != "" {
		l += "\n" + shorten(t, 40)
	}
	if id := n.Value(otelJSONRPCRequestID); id != "" {
		l += "\nid " + shorten(id, 20)
	}
	return l
}

func errorMark(n *Node) string {
	if n.Value(wIsError) == "true" {
		return " (error)"
	}
	return ""
}

func lastSegment(iri string) string {
	if i := strings.LastIndexByte(iri, '/'); i >= 0 && i+1 < len(iri) {
		return iri[i+1:]
	}
	return iri
}

// drawnEdges are the relations drawn as edges. Association and attribution
// are not: they would tie every node to one agent (a hub Graphviz stalls on).
// The ambiguous links (a candidate, never a guess) are dashed.
var drawnEdges = []struct{ pred, label, style string }{
	{ProvUsed, "used", ""},
	{ProvWasGeneratedBy, "wasGeneratedBy", ""},
	{ProvWasInformedBy, "wasInformedBy", ""},
	{ProvWasDerivedFrom, "wasDerivedFrom", ""},
	{ProvWasInfluencedBy, "wasInfluencedBy", ""},
	{WDuringCandidate, "during?", "dashed"},
	{WPossiblyInfluencedBy, "influenced?", "dashed"},
}

// Relation is a causal relation pictures draw as an edge, from the node
// that depends to the node it depends on.
type Relation struct {
	Pred  string // the predicate IRI
	Label string // its short name
	// Ambiguous marks a candidate link (witness:duringCandidate,
	// witness:possiblyInfluencedBy): drawn dashed, never a guess.
	Ambiguous bool
}

// CausalRelations lists the relations drawn as edges, in drawing order;
// the report and the DOT writer share it.
func CausalRelations() []Relation {
	out := make([]Relation, len(drawnEdges))
	for i, e := range drawnEdges {
		out[i] = Relation{Pred: e.pred, Label: e.label, Ambiguous: e.style == "dashed"}
	}
	return out
}

// NodeLabel is the short human label pictures give n ("call write_file\ne7").
func NodeLabel(n *Node) string { return nodeLabel(n) }

// DrawKind is how pictures draw n: "activity", "entity", "agent", or ""
// for nodes folded into labels (associations, the session, tool
// definitions, the seal).
func DrawKind(n *Node) string { return kindOf(n) }

// NodeEvent returns the id of the event that made n: its witness:eventId,
// or for the secondary nodes of an event (arguments, params: only the
// primary node carries the id) the event id that ends its IRI
// (".../args/e3"). "" for nodes no event made (agents, the seal).
func NodeEvent(n *Node) string {
	if ev := n.Value(WEventID); ev != "" {
		return ev
	}
	if seg := lastSegment(n.ID); seg != n.ID && eventSeq(seg) >= 0 {
		return seg
	}
	return ""
}

// NodeSeq returns the log position of n's event (witness:seq, else the
// position an "e<seq>" event id names), or -1 for a node no event made.
func NodeSeq(n *Node) int64 {
	if v := n.Value(WSeq); v != "" {
		return digits(v)
	}
	return eventSeq(NodeEvent(n))
}

// eventSeq reads "e<seq>", the form of every witness event id; -1 if id
// has another form.
func eventSeq(id string) int64 {
	if len(id) < 2 || id[0] != 'e' {
		return -1
	}
	return digits(id[1:])
}

func digits(v string) int64 {
	if v == "" {
		return -1
	}
	var x int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1
		}
		x = x*10 + int64(c-'0')
		if x > 1<<53 {
			return -1
		}
	}
	return x
}

// resolveClasses maps event-id keys to node IRIs. A node named both by
// its IRI and by its event id takes the class given for its IRI.
func (g *Graph) resolveClasses(classes map[string]string) map[string]string {
	out := make(map[string]string, len(classes))
	var byEvent map[string]string
	for k := range classes {
		if g.Node(k) != nil {
			continue
		}
		if byEvent == nil {
			byEvent = map[string]string{}
			for _, n := range g.Nodes {
				if ev := n.Value(WEventID); ev != "" {
					byEvent[ev] = n.ID
				}
			}
		}
		if id, ok := byEvent[k]; ok {
			out[id] = classes[k]
		}
	}
	for k, v := range classes {
		if g.Node(k) != nil {
			out[k] = v
		}
	}
	return out
}

// WriteDOT draws g for Graphviz: entities as yellow ellipses, activities as
// blue boxes, agents as orange houses (each once, inside the session
// cluster, without edges), findings filled with their class colour, each
// attribute once. Time runs left to right (rankdir=LR): one rank per event
// position, held in order by a chain of invisible time points; causal
// edges go from a node to its causes and do not constrain the ranks.
// Graphs with more drawable nodes than opts.MaxNodes are drawn as a
// summary: one cluster per time window (summaryWindows of them, whatever
// the number of events), one node per class in it with its count, edges
// aggregated, and the classified nodes.
func (g *Graph) WriteDOT(w io.Writer, opts DOTOptions) error {
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = DefaultDOTMaxNodes
	}
	classes := g.resolveClasses(opts.Classes)
	var drawn []*Node
	for _, n := range g.Nodes {
		if kindOf(n) != "" {
			drawn = append(drawn, n)
		}
	}
	bw := bufio.NewWriter(w)
	writeDOTHead(bw, opts.Title)
	if len(drawn) > opts.MaxNodes {
		g.writeSummary(bw, drawn, classes, opts.MaxNodes)
	} else {
		g.writeFull(bw, drawn, classes)
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// writeDOTHead opens the picture: the graph, node and edge defaults and
// the title.
func writeDOTHead(bw *bufio.Writer, title string) {
	if title == "" {
		title = "witness PROV graph"
	}
	fmt.Fprintf(bw, "digraph witness {\n  graph [rankdir=LR, newrank=true, fontname=\"Helvetica\", label=%s, labelloc=t];\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n", dotQuote(title))
}

// nodeAttrs returns the attributes of a drawn node, each key once: the
// PROV style of its kind, replaced by its class's fill and style when it
// has one.
func nodeAttrs(label, kind, class string) string {
	st, ok := kindStyle[kind]
	if !ok {
		st = kindStyle["entity"]
	}
	if class == "" {
		return fmt.Sprintf(`label=%s, shape=%s, style=filled, fillcolor="%s", color="%s"`, dotQuote(label), st[0], st[1], st[2])
	}
	c, ok := classStyle[class]
	if !ok {
		c = "#ff00ff"
	}
	style := "filled,bold"
	if class == "removed" || class == "ambiguous" {
		style = "filled,dashed"
	}
	return fmt.Sprintf(`label=%s, shape=%s, color="%s", fillcolor="%s", style="%s", penwidth=3, tooltip=%s`, dotQuote(label), st[0], st[2], c, style, dotQuote(class))
}

// timeSteps groups drawn nodes by their event's position (witness:seq), in
// time order; nodes no event made come first, in a group of their own
// (seq -1).
func timeSteps(drawn []*Node) ([]int64, map[int64][]int) {
	by := map[int64][]int{}
	var seqs []int64
	for i, n := range drawn {
		q := NodeSeq(n)
		if _, ok := by[q]; !ok {
			seqs = append(seqs, q)
		}
		by[q] = append(by[q], i)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, by
}

func (g *Graph) writeFull(bw *bufio.Writer, drawn []*Node, classes map[string]string) {
	ids := make(map[string]string, len(drawn))
	for i, n := range drawn {
		ids[n.ID] = fmt.Sprintf("n%d", i)
	}
	// the session cluster holds the agents (drawn once) and a label naming
	// the seal
	label := "session"
	for _, s := range g.OfType(WCaptureSession) {
		label = "session " + s.Value(WSession)
	}
	for _, p := range g.OfType(ProvPlan) {
		label += "\nplan: seal " + shorten(p.Value(WSealDigest), 16)
		if wid := p.Value(WWitnessID); wid != "" {
			label += " (" + wid + ")"
		}
	}
	fmt.Fprintf(bw, "  subgraph cluster_session {\n    label=%s; style=rounded; color=\"#999999\";\n", dotQuote(label))
	for _, n := range drawn {
		fmt.Fprintf(bw, "    %s [%s];\n", ids[n.ID], nodeAttrs(nodeLabel(n), kindOf(n), classes[n.ID]))
	}
	// time runs left to right: one rank per event position, held in order
	// by an invisible chain of time points
	seqs, by := timeSteps(drawn)
	for i, q := range seqs {
		fmt.Fprintf(bw, "    t%d [shape=point, style=invis, width=0];\n    { rank=same; t%d;", i, i)
		for _, k := range by[q] {
			fmt.Fprintf(bw, " n%d;", k)
		}
		bw.WriteString(" }\n")
	}
	for i := 1; i < len(seqs); i++ {
		fmt.Fprintf(bw, "    t%d -> t%d [style=invis];\n", i-1, i)
	}
	bw.WriteString("  }\n")
	// causal edges point from the dependent node to its cause, which is
	// earlier: they do not constrain the ranks (the time points do)
	labels := len(drawn) <= 100
	for _, n := range drawn {
		for _, e := range drawnEdges {
			for _, to := range n.Refs(e.pred) {
				t, ok := ids[to]
				if !ok {
					continue
				}
				var attrs []string
				if labels {
					attrs = append(attrs, "label="+dotQuote(e.label))
				}
				if e.style != "" {
					attrs = append(attrs, "style="+e.style)
				}
				attrs = append(attrs, "constraint=false")
				fmt.Fprintf(bw, "  %s -> %s [%s];\n", ids[n.ID], t, strings.Join(attrs, ", "))
			}
		}
	}
}

// subclasses are the witness classes that refine another witness class a
// node also has; summaries count them apart.
var subclasses = []string{wSamplingTurn, wResourceRead, wPromptGet, wElicitation, wResourceContents, wPromptMessages}

// className returns the most specific witness class of n, for summaries.
func className(n *Node) string {
	for _, t := range subclasses {
		if n.HasType(t) {
			return strings.TrimPrefix(t, NSWitness)
		}
	}
	for _, t := range n.Types {
		if strings.HasPrefix(t, NSWitness) {
			return strings.TrimPrefix(t, NSWitness)
		}
	}
	if len(n.Types) > 0 {
		return compact(n.Types[0])
	}
	return "node"
}

// summaryWindows is the number of time windows of a summary: a summary
// has at most this many clusters, whatever the number of events.
const summaryWindows = 12

func (g *Graph) writeSummary(bw *bufio.Writer, drawn []*Node, classes map[string]string, max int) {
	s := &dotSummary{max: max}
	of := make(map[string]int32, len(drawn))
	cls := map[string]int32{}
	for i, n := range drawn {
		of[n.ID] = int32(i)
		s.add(NodeSeq(n), kindOf(n), className(n), cls)
	}
	for i, n := range drawn {
		for r, e := range drawnEdges {
			for _, to := range n.Refs(e.pred) {
				if t, ok := of[to]; ok {
					s.edges = append(s.edges, dotEdge{from: int32(i), to: t, rel: uint8(r)})
				}
			}
		}
	}
	for id, c := range classes {
		if k, ok := of[id]; ok {
			s.found = append(s.found, dotFinding{id: id, node: k, n: drawn[k], class: c})
		}
	}
	s.write(bw)
}

// dotKinds are the drawing kinds a summary keeps per node, by index.
var dotKinds = []string{"", "entity", "activity", "agent"}

func kindIndex(kind string) uint8 {
	for i, k := range dotKinds {
		if k == kind {
			return uint8(i)
		}
	}
	return 1
}

// dotSummary is what a summary needs of the drawn nodes, without the nodes:
// per node (in node IRI order) its time step, drawing kind and class name;
// the causal edges between drawn nodes; the classified drawn nodes. The
// in-memory WriteDOT and the streamed StreamDOT both fill one and draw it
// with write, so their bytes are the same.
type dotSummary struct {
	max   int
	seq   []int64  // NodeSeq of each drawn node
	kind  []uint8  // index in dotKinds
	class []int32  // index in names
	names []string // class names, by first appearance
	edges []dotEdge
	found []dotFinding
}

type dotEdge struct {
	from, to int32 // drawn node indexes
	rel      uint8 // index in drawnEdges
}

// dotFinding is a classified drawn node, drawn beside its window's class.
type dotFinding struct {
	id    string
	node  int32
	n     *Node
	class string
}

// add appends a drawn node; cls interns the class names.
func (s *dotSummary) add(seq int64, kind, class string, cls map[string]int32) {
	c, ok := cls[class]
	if !ok {
		c = int32(len(s.names))
		cls[class] = c
		s.names = append(s.names, class)
	}
	s.seq = append(s.seq, seq)
	s.kind = append(s.kind, kindIndex(kind))
	s.class = append(s.class, c)
}

// write draws the summary: one cluster per time window (summaryWindows of
// them, whatever the number of events), one node per class in it with its
// count, edges aggregated, and the classified nodes.
func (s *dotSummary) write(bw *bufio.Writer) {
	type cls struct {
		kind  uint8
		count int
	}
	seqs := slices.Clone(s.seq)
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	windows := summaryWindows
	if len(seqs) < windows {
		windows = len(seqs)
	}
	per := (len(seqs) + windows - 1) / windows
	lo := make([]int64, windows)
	hi := make([]int64, windows)
	for si, q := range seqs {
		w := si / per
		if si%per == 0 {
			lo[w] = q
		}
		hi[w] = q
	}
	windows = (len(seqs) + per - 1) / per
	// the window of each drawn node, by its time step
	winOf := func(q int64) int {
		si, _ := slices.BinarySearch(seqs, q)
		return si / per
	}
	type key struct {
		w int
		c int32
	}
	counts := map[key]*cls{}
	total := make([]int, len(s.names))
	of := make([]key, len(s.seq))
	for i, q := range s.seq {
		k := key{winOf(q), s.class[i]}
		of[i] = k
		if counts[k] == nil {
			counts[k] = &cls{kind: s.kind[i]}
		}
		counts[k].count++
		total[k.c]++
	}
	less := func(a, b key) bool {
		if a.w != b.w {
			return a.w < b.w
		}
		return s.names[a.c] < s.names[b.c]
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	name := func(k key) string { return dotQuote(fmt.Sprintf("w%d:%s", k.w, s.names[k.c])) }
	names := slices.Clone(s.names)
	sort.Strings(names)
	var tot []string
	for _, c := range names {
		tot = append(tot, fmt.Sprintf("%s × %d", c, total[slices.Index(s.names, c)]))
	}
	fmt.Fprintf(bw, "  summary [shape=note, label=%s];\n", dotQuote(fmt.Sprintf("summary: %d nodes, more than the %d that can be drawn;\none cluster per time window, one node per class in it, edges aggregated\n%s", len(s.seq), s.max, strings.Join(tot, ", "))))
	i := 0
	for w := 0; w < windows; w++ {
		label := fmt.Sprintf("events seq %d–%d", lo[w], hi[w])
		if lo[w] < 0 {
			label = "not from an event"
		}
		fmt.Fprintf(bw, "  subgraph cluster_w%d {\n    label=%s; style=rounded; color=\"#999999\";\n    w%d [shape=point, style=invis, width=0];\n", w, dotQuote(label), w)
		for ; i < len(keys) && keys[i].w == w; i++ {
			k := keys[i]
			fmt.Fprintf(bw, "    %s [%s];\n", name(k), nodeAttrs(fmt.Sprintf("%s\n× %d", s.names[k.c], counts[k].count), dotKinds[counts[k].kind], ""))
		}
		bw.WriteString("  }\n")
		if w > 0 {
			fmt.Fprintf(bw, "  w%d -> w%d [style=invis];\n", w-1, w)
		}
	}
	type edge struct {
		from, to key
		label    string
	}
	ecount := map[edge]int{}
	for _, e := range s.edges {
		ecount[edge{of[e.from], of[e.to], drawnEdges[e.rel].label}]++
	}
	edges := make([]edge, 0, len(ecount))
	for e := range ecount {
		edges = append(edges, e)
	}
	sort.Slice(edges, func(i, j int) bool {
		a, b := edges[i], edges[j]
		if a.from != b.from {
			return less(a.from, b.from)
		}
		if a.to != b.to {
			return less(a.to, b.to)
		}
		return a.label < b.label
	})
	for _, e := range edges {
		fmt.Fprintf(bw, "  %s -> %s [label=%s, constraint=false];\n", name(e.from), name(e.to), dotQuote(fmt.Sprintf("%s × %d", e.label, ecount[e])))
	}
	// findings stay visible: the classified nodes, up to 50, beside their
	// window's class node
	found := slices.Clone(s.found)
	sort.Slice(found, func(i, j int) bool { return found[i].id < found[j].id })
	more := 0
	if len(found) > 50 {
		more = len(found) - 50
		found = found[:50]
	}
	for i, f := range found {
		fmt.Fprintf(bw, "  f%d [%s];\n  f%d -> %s [style=dotted, arrowhead=none];\n", i, nodeAttrs(nodeLabel(f.n), kindOf(f.n), f.class), i, name(of[f.node]))
	}
	if more > 0 {
		fmt.Fprintf(bw, "  more_findings [shape=plaintext, label=%s];\n", dotQuote(fmt.Sprintf("… and %d more classified nodes", more)))
	}
}
