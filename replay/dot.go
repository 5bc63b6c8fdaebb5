package replay

import (
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/graph"
)

// DOT classes replay gives graph.WriteDOT.
const (
	classRemoved       = "removed"        // in the compensation set: grey, dashed
	classNotReplayable = "not-replayable" // in the compensation set and not replayable: magenta, bold
	classAmbiguous     = "ambiguous"      // possibly removed, through an ambiguous link: light orange, dashed
)

// WriteDOT draws the observed graph with graph's DOT writer (PROV shapes,
// a summary above graph.DefaultDOTMaxNodes drawable nodes): the
// compensation set in class "removed" (grey, dashed), its not-replayable
// members in class "not-replayable" (magenta, bold), the nodes possibly
// removed through ambiguous links in class "ambiguous" (orange, dashed). The title names what
// was removed and the counts. Same input, same bytes.
func (e *Engine) WriteDOT(w io.Writer, r *Result) error {
	if e.g == nil {
		return errNoGraph
	}
	classes := make(map[string]string, len(r.CompensationSet)+len(r.PossiblyRemoved))
	for _, m := range r.PossiblyRemoved {
		classes[m.Node] = classAmbiguous
	}
	for _, m := range r.CompensationSet {
		classes[m.Node] = classRemoved
	}
	for _, n := range r.NotReplayable {
		classes[n.Node] = classNotReplayable
	}
	var names []string
	for _, x := range r.Removed {
		s := shortID(x.Node)
		if x.Tool != "" {
			s += " (" + x.Tool + ")"
		}
		names = append(names, s)
	}
	title := fmt.Sprintf("counterfactual: without %s\ngrey, dashed: compensation set (%d nodes, %d of %d actions, synergy_residual %v)\nmagenta: not replayable (%d); replay re-creates nothing",
		strings.Join(names, ", "), len(r.CompensationSet), r.CompensationActions, r.Graph.Actions, r.SynergyResidual, len(r.NotReplayable))
	if len(r.PossiblyRemoved) > 0 {
		title += fmt.Sprintf("\norange, dashed: possibly removed through %d ambiguous link(s) (%d nodes)", len(r.Ambiguous), len(r.PossiblyRemoved))
	}
	return e.g.WriteDOT(w, graph.DOTOptions{Classes: classes, Title: title})
}

// shortID keeps the last two path segments of a witness IRI ("call/e6").
func shortID(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) >= 3 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return id
}
