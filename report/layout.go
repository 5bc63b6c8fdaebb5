package report

import (
	"fmt"
	"sort"

	"github.com/agent-trace-witness/witness/graph"
)

// Picture is the causal graph laid out for the page: time runs left to
// right (one column per timeline position, or per time window in a
// summary), one band per actor lane.
type Picture struct {
	W       int      `json:"w"`
	H       int      `json:"h"`
	Lanes   []int    `json:"lanes"` // the y of each lane band's top
	LaneH   int      `json:"lane_h"`
	Nodes   []PNode  `json:"nodes"`
	Edges   []PEdge  `json:"edges"`
	Total   int      `json:"total"`             // graph nodes drawn or summarised
	Summary string   `json:"summary,omitempty"` // set when the picture is a summary
	Legend  []string `json:"legend,omitempty"`
}

// PNode is one drawn node (or, in a summary, one time window of one lane).
type PNode struct {
	X     int    `json:"x"`
	Y     int    `json:"y"`
	Label string `json:"label"`
	Kind  string `json:"kind"`            // activity, entity, window
	Class string `json:"class,omitempty"` // the worst finding class on it
	Row   int    `json:"row"`             // timeline row of its event, -1 for none
	Count int    `json:"count,omitempty"` // summary: nodes in the window
}

// PEdge is one drawn edge, from the dependent node to its cause.
type PEdge struct {
	From   int    `json:"from"`
	To     int    `json:"to"`
	Rel    string `json:"rel"`
	Dashed bool   `json:"dashed,omitempty"`
	N      int    `json:"n,omitempty"` // summary: edges aggregated
}

const (
	colW   = 64
	laneH  = 84
	stackH = 20
	margin = 120
)

// gnode is what the picture needs of one graph node: kept instead of the
// node, so that a large graph is drawn from this projection.
type gnode struct {
	id    string
	label string // "" in a summary (not drawn)
	kind  string
	edges []gedge // causal relations, in graph.CausalRelations order
	log   int
	row   int
	lane  int
	class string
}

// gedge is one causal relation of a gnode.
type gedge struct {
	rel int // index into graph.CausalRelations
	to  string
}

// nodeClasses gives the worst finding class of each (log, event).
func nodeClasses(logs []*logState) map[[2]any]string {
	classes := map[[2]any]string{}
	for li, ls := range logs {
		for _, f := range ls.findings {
			k := [2]any{li, f.EventID}
			if f.EventID != "" && (classes[k] == "" || classRank(string(f.Class)) > classRank(classes[k])) {
				classes[k] = string(f.Class)
			}
		}
	}
	return classes
}

// projection is what projectNode reads besides the node: the timeline
// row of a log's event, the worst finding class of a (log, event)
// (nodeClasses), the lane of a row and graph.CausalRelations.
type projection struct {
	rowOf   func(log int, ev string) (int, bool)
	classes map[[2]any]string
	laneAt  func(log int, ev string, row int) int
	rels    []graph.Relation
}

// projectNode is n as the picture draws it, or false when n is not drawn
// (not an activity or entity, or its event has no timeline row).
func projectNode(n *graph.Node, li int, pr projection, labels bool) (gnode, bool) {
	k := graph.DrawKind(n)
	if (k != "activity" && k != "entity") || li < 0 {
		return gnode{}, false
	}
	ev := graph.NodeEvent(n)
	r, ok := pr.rowOf(li, ev)
	if !ok {
		return gnode{}, false
	}
	g := gnode{id: n.ID, kind: k, log: li, row: r, lane: pr.laneAt(li, ev, r), class: pr.classes[[2]any{li, ev}]}
	if labels {
		g.label = graph.NodeLabel(n)
	}
	for ri, rel := range pr.rels {
		for _, to := range n.Refs(rel.Pred) {
			g.edges = append(g.edges, gedge{rel: ri, to: to})
		}
	}
	return g, true
}

func classRank(c string) int {
	switch c {
	case "tampered":
		return 4
	case "incomplete":
		return 3
	case "unauthenticated":
		return 2
	case "violation":
		return 1
	}
	return 0
}

// layout draws the graphs of the logs in time order, or summarises them
// above MaxGraphNodes; laneAt gives the lane of a node's event.
func layout(run *runState, logs []*logState, lanes *interner, laneAt func(log int, ev string, row int) int, o Options) Picture {
	var ns []gnode
	if run != nil {
		pr := projection{
			rowOf: func(li int, ev string) (int, bool) {
				r, ok := logs[li].rowOf[ev]
				return r, ok
			},
			classes: nodeClasses(logs), laneAt: laneAt, rels: graph.CausalRelations(),
		}
		for _, n := range run.g.Nodes {
			if g, ok := projectNode(n, run.logOf(n.ID), pr, true); ok {
				ns = append(ns, g)
			}
		}
	}
	return draw(ns, lanes, o)
}

// draw lays out the projected nodes: one by one up to MaxGraphNodes, else
// a summary per time window.
func draw(ns []gnode, lanes *interner, o Options) Picture {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].row != ns[j].row {
			return ns[i].row < ns[j].row
		}
		return ns[i].id < ns[j].id
	})
	p := frame(len(ns), lanes)
	if len(ns) <= o.MaxGraphNodes {
		drawFull(&p, ns)
	} else {
		sn, se := summaryOf(ns)
		drawSummary(&p, sn, se, o.GraphWindows)
	}
	return p
}

// frame is an empty picture of total nodes with one band per lane.
func frame(total int, lanes *interner) Picture {
	p := Picture{Total: total, LaneH: laneH}
	for i := range lanes.list {
		p.Lanes = append(p.Lanes, i*laneH)
	}
	p.H = len(lanes.list) * laneH
	return p
}

func drawFull(p *Picture, ns []gnode) {
	idx := map[string]int{}
	col, lastRow := -1, -1
	stack := map[int]int{} // lane → nodes stacked in the current column
	for i, g := range ns {
		if g.row != lastRow {
			col++
			lastRow = g.row
			stack = map[int]int{}
		}
		y := g.lane*laneH + 18 + stack[g.lane]*stackH
		stack[g.lane]++
		p.Nodes = append(p.Nodes, PNode{X: margin + col*colW + colW/2, Y: y, Label: g.label, Kind: g.kind, Class: g.class, Row: g.row})
		idx[g.id] = i
	}
	p.W = margin + (col+1)*colW + 40
	rels := graph.CausalRelations()
	for i, g := range ns {
		for _, e := range g.edges {
			if j, ok := idx[e.to]; ok && j != i {
				r := rels[e.rel]
				p.Edges = append(p.Edges, PEdge{From: i, To: j, Rel: r.Label, Dashed: r.Ambiguous})
			}
		}
	}
}

// snode is a drawn node of a summary: its row, lane and finding class.
type snode struct {
	row   int32 // -1: not drawn (only the target of an edge)
	lane  int32
	class string
}

// sedge is a causal relation between two snodes.
type sedge struct {
	from, to int32
	rel      int32 // index into graph.CausalRelations
}

// summaryOf indexes projected nodes for drawSummary.
func summaryOf(ns []gnode) ([]snode, []sedge) {
	idx := make(map[string]int32, len(ns))
	out := make([]snode, 0, len(ns))
	for i, g := range ns {
		idx[g.id] = int32(i)
		out = append(out, snode{row: int32(g.row), lane: int32(g.lane), class: g.class})
	}
	var es []sedge
	for i, g := range ns {
		for _, e := range g.edges {
			if j, ok := idx[e.to]; ok {
				es = append(es, sedge{from: int32(i), to: j, rel: int32(e.rel)})
			}
		}
	}
	return out, es
}

// drawSummary draws one box per lane and time window of the drawn nodes
// (row >= 0), with the edges between boxes aggregated.
func drawSummary(p *Picture, ns []snode, es []sedge, windows int) {
	maxRow, drawn := 0, 0
	for _, g := range ns {
		if g.row >= 0 {
			maxRow = max(maxRow, int(g.row)+1)
			drawn++
		}
	}
	size := (maxRow + windows - 1) / windows
	type key struct{ w, lane int }
	box := map[key]int{}
	var keys []key
	count := map[key]int{}
	class := map[key]string{}
	for _, g := range ns {
		if g.row < 0 {
			continue
		}
		k := key{int(g.row) / size, int(g.lane)}
		if _, ok := count[k]; !ok {
			keys = append(keys, k)
		}
		count[k]++
		if classRank(g.class) > classRank(class[k]) || (class[k] == "" && g.class != "") {
			class[k] = g.class
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].w != keys[j].w {
			return keys[i].w < keys[j].w
		}
		return keys[i].lane < keys[j].lane
	})
	w := 2 * colW
	for i, k := range keys {
		box[k] = i
		lo, hi := k.w*size, (k.w+1)*size-1
		p.Nodes = append(p.Nodes, PNode{X: margin + k.w*w + w/2, Y: k.lane*laneH + laneH/2, Kind: "window", Count: count[k], Class: class[k], Row: lo,
			Label: fmt.Sprintf("%d nodes\nevents %d–%d", count[k], lo, hi)})
	}
	boxOf := func(g snode) int { return box[key{int(g.row) / size, int(g.lane)}] }
	type ek struct {
		from, to int
		rel      string
	}
	agg := map[ek]int{}
	rels := graph.CausalRelations()
	for _, e := range es {
		a, b := ns[e.from], ns[e.to]
		if a.row < 0 || b.row < 0 {
			continue
		}
		if f, t := boxOf(a), boxOf(b); t != f {
			agg[ek{f, t, rels[e.rel].Label}]++
		}
	}
	eks := make([]ek, 0, len(agg))
	for e := range agg {
		eks = append(eks, e)
	}
	sort.Slice(eks, func(i, j int) bool {
		a, b := eks[i], eks[j]
		if a.from != b.from {
			return a.from < b.from
		}
		if a.to != b.to {
			return a.to < b.to
		}
		return a.rel < b.rel
	})
	for _, e := range eks {
		p.Edges = append(p.Edges, PEdge{From: e.from, To: e.to, Rel: e.rel, N: agg[e]})
	}
	p.W = margin + (windows+1)*w
	p.Summary = fmt.Sprintf("%d nodes, more than can be drawn one by one: one box per actor and time window of %d events (its node count), edges aggregated between boxes; red boxes hold a finding", drawn, size)
}
