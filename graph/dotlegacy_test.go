package graph

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// legacyWriteSummary is writeSummary as it was before the summary was
// drawn from a dotSummary: the oracle the in-memory and streamed summaries
// are compared with.
func (g *Graph) legacyWriteSummary(bw *bufio.Writer, drawn []*Node, classes map[string]string, max int) {
	type cls struct {
		kind  string
		count int
	}
	seqs, by := timeSteps(drawn)
	windows := summaryWindows
	if len(seqs) < windows {
		windows = len(seqs)
	}
	per := (len(seqs) + windows - 1) / windows
	// window of each drawn node, by its time step
	win := make([]int, len(drawn))
	lo := make([]int64, windows)
	hi := make([]int64, windows)
	for si, q := range seqs {
		w := si / per
		if si%per == 0 {
			lo[w] = q
		}
		hi[w] = q
		for _, k := range by[q] {
			win[k] = w
		}
	}
	windows = (len(seqs) + per - 1) / per
	type key struct {
		w int
		c string
	}
	counts := map[key]*cls{}
	total := map[string]int{}
	of := make(map[string]key, len(drawn))
	for i, n := range drawn {
		k := key{win[i], className(n)}
		of[n.ID] = k
		if counts[k] == nil {
			counts[k] = &cls{kind: kindOf(n)}
		}
		counts[k].count++
		total[k.c]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].w != keys[j].w {
			return keys[i].w < keys[j].w
		}
		return keys[i].c < keys[j].c
	})
	name := func(k key) string { return dotQuote(fmt.Sprintf("w%d:%s", k.w, k.c)) }
	names := make([]string, 0, len(total))
	for c := range total {
		names = append(names, c)
	}
	sort.Strings(names)
	var tot []string
	for _, c := range names {
		tot = append(tot, fmt.Sprintf("%s × %d", c, total[c]))
	}
	fmt.Fprintf(bw, "  summary [shape=note, label=%s];\n", dotQuote(fmt.Sprintf("summary: %d nodes, more than the %d that can be drawn;\none cluster per time window, one node per class in it, edges aggregated\n%s", len(drawn), max, strings.Join(tot, ", "))))
	i := 0
	for w := 0; w < windows; w++ {
		label := fmt.Sprintf("events seq %d–%d", lo[w], hi[w])
		if lo[w] < 0 {
			label = "not from an event"
		}
		fmt.Fprintf(bw, "  subgraph cluster_w%d {\n    label=%s; style=rounded; color=\"#999999\";\n    w%d [shape=point, style=invis, width=0];\n", w, dotQuote(label), w)
		for ; i < len(keys) && keys[i].w == w; i++ {
			k := keys[i]
			fmt.Fprintf(bw, "    %s [%s];\n", name(k), nodeAttrs(fmt.Sprintf("%s\n× %d", k.c, counts[k].count), counts[k].kind, ""))
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
	for _, n := range drawn {
		for _, e := range drawnEdges {
			for _, to := range n.Refs(e.pred) {
				if tk, ok := of[to]; ok {
					ecount[edge{of[n.ID], tk, e.label}]++
				}
			}
		}
	}
	edges := make([]edge, 0, len(ecount))
	for e := range ecount {
		edges = append(edges, e)
	}
	less := func(a, b key) bool {
		if a.w != b.w {
			return a.w < b.w
		}
		return a.c < b.c
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
	var found []string
	for id := range classes {
		if _, ok := of[id]; ok {
			found = append(found, id)
		}
	}
	sort.Strings(found)
	more := 0
	if len(found) > 50 {
		more = len(found) - 50
		found = found[:50]
	}
	for i, id := range found {
		n := g.Node(id)
		fmt.Fprintf(bw, "  f%d [%s];\n  f%d -> %s [style=dotted, arrowhead=none];\n", i, nodeAttrs(nodeLabel(n), kindOf(n), classes[id]), i, name(of[id]))
	}
	if more > 0 {
		fmt.Fprintf(bw, "  more_findings [shape=plaintext, label=%s];\n", dotQuote(fmt.Sprintf("… and %d more classified nodes", more)))
	}
}

// legacyWriteDOT is WriteDOT with legacyWriteSummary.
func (g *Graph) legacyWriteDOT(w io.Writer, opts DOTOptions) error {
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
		g.legacyWriteSummary(bw, drawn, classes, opts.MaxNodes)
	} else {
		g.writeFull(bw, drawn, classes)
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
