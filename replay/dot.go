package replay

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// DOTMaxNodes is the size above which WriteDOT draws only the compensation
// set and its direct neighbours.
const DOTMaxNodes = 400

// WriteDOT draws the observed graph (activities, entities and agents, with
// the four dependency edges) in Graphviz DOT: the compensation set greyed
// and dashed, the removed nodes with a bold outline, not-replayable nodes
// with a red double outline and a "not replayable" line in their label.
// Graphs above DOTMaxNodes nodes are cut to the compensation set and its
// direct neighbours. Same input, same bytes.
func (e *Engine) WriteDOT(w io.Writer, r *Result) error {
	ix := e.ix
	bw := bufio.NewWriter(w)
	draw := make([]bool, ix.n())
	cut := ix.n() > DOTMaxNodes
	removed := map[string]bool{}
	for _, x := range r.Removed {
		removed[x.Node] = true
	}
	for i, rec := range ix.recs {
		if rec.Kind == KindOther {
			continue
		}
		draw[i] = !cut || r.in[i]
	}
	if cut {
		for i, rec := range ix.recs {
			if !r.in[i] {
				continue
			}
			for _, d := range rec.Deps {
				if j, ok := ix.pos[d.On]; ok && ix.recs[j].Kind != KindOther {
					draw[j] = true
				}
			}
			deps, _ := ix.dependents(int32(i))
			for _, j := range deps {
				if ix.recs[j].Kind != KindOther {
					draw[j] = true
				}
			}
		}
	}
	fmt.Fprintf(bw, "digraph counterfactual {\n")
	fmt.Fprintf(bw, "  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n")
	label := fmt.Sprintf("counterfactual: %d node(s) removed, %d not replayable; synergy_residual %v", len(r.CompensationSet), len(r.NotReplayable), r.SynergyResidual)
	if cut {
		label += fmt.Sprintf(" (graph of %d nodes cut to the compensation set and its neighbours)", ix.n())
	}
	fmt.Fprintf(bw, "  label=%s;\n  labelloc=t;\n", dotQuote(label))
	for i, rec := range ix.recs {
		if !draw[i] {
			continue
		}
		var attrs []string
		switch rec.Kind {
		case KindActivity:
			attrs = append(attrs, "shape=box")
		case KindAgent:
			attrs = append(attrs, "shape=house")
		default:
			attrs = append(attrs, "shape=ellipse")
		}
		lines := []string{shortID(rec.ID)}
		if rec.Tool != "" {
			lines = append(lines, rec.Tool)
		}
		if rec.Effect != nil {
			lines = append(lines, strings.TrimSpace(rec.Effect.Op+" "+rec.Effect.Target))
		}
		fill := map[Kind]string{KindActivity: "#9fb1fc", KindEntity: "#fffc87", KindAgent: "#fed37f"}[rec.Kind]
		style := []string{"filled"}
		if r.in[i] {
			fill = "#d9d9d9"
			style = append(style, "dashed")
			attrs = append(attrs, "fontcolor=\"#555555\"", "class=\"compensation\"")
			if removed[rec.ID] {
				style = append(style, "bold")
				lines = append(lines, "removed")
			}
		}
		if r.in[i] && len(ix.notRep[i]) > 0 {
			attrs = append(attrs, "color=\"#d62728\"", "peripheries=2", "penwidth=2")
			lines = append(lines, "NOT REPLAYABLE")
		}
		attrs = append(attrs, "fillcolor=\""+fill+"\"", "style=\""+strings.Join(style, ",")+"\"", "label="+dotQuote(strings.Join(lines, "\n")))
		fmt.Fprintf(bw, "  %s [%s];\n", dotQuote(rec.ID), strings.Join(attrs, ", "))
	}
	for i, rec := range ix.recs {
		if !draw[i] {
			continue
		}
		for _, d := range rec.Deps {
			j, ok := ix.pos[d.On]
			if !ok || !draw[j] {
				continue
			}
			attrs := []string{"label=" + dotQuote(strings.TrimPrefix(d.Edge.Name(), "prov:"))}
			if r.in[i] {
				attrs = append(attrs, "style=dashed", "color=\"#999999\"")
			}
			fmt.Fprintf(bw, "  %s -> %s [%s];\n", dotQuote(rec.ID), dotQuote(d.On), strings.Join(attrs, ", "))
		}
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// shortID keeps the last two path segments of a witness IRI ("call/e6").
func shortID(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) >= 3 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return id
}

func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
