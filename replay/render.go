package replay

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// WriteJSON writes v (a *Result or *RankResult) as canonical JSON
// (internal/canon) and a final newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode replay output: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteText writes a human summary of a counterfactual.
func (r *Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	for _, x := range r.Removed {
		tool := ""
		if x.Tool != "" {
			tool = ", tool " + x.Tool
		}
		p("remove: %s (%s%s)\n", x.Node, x.Kind, tool)
	}
	p("compensation set: %d node(s), %d of %d action(s); synergy_residual %s\n",
		len(r.CompensationSet), r.CompensationActions, r.Graph.Actions, strconv.FormatFloat(r.SynergyResidual, 'f', -1, 64))
	for _, m := range r.CompensationSet {
		why := "removed"
		if m.Via != nil {
			why = m.Via.Edge + " " + m.Via.On
		}
		p("  - %s [%s] %s\n", m.Node, m.Kind, why)
	}
	if len(r.NotReplayable) == 0 {
		p("not replayable: none\n")
	} else {
		p("not replayable (replay cannot undo these):\n")
		for _, n := range r.NotReplayable {
			what := n.Node
			if n.Op != "" {
				what += " " + n.Op
				if n.Target != "" {
					what += " " + n.Target
				}
			}
			p("  - %s: %s\n", what, strings.Join(n.Reasons, "; "))
		}
	}
	if len(r.Ambiguous) > 0 {
		p("ambiguous links (never guessed; the compensation set may be larger):\n")
		for _, a := range r.Ambiguous {
			p("  - %s may depend on %s (%s; candidates: %s)\n", a.Node, strings.Join(a.On, ", "), a.Link, strings.Join(a.Candidates, ", "))
		}
		p("possibly removed, if those links held: %d node(s)\n", len(r.PossiblyRemoved))
		for _, m := range r.PossiblyRemoved {
			p("  - %s [%s] %s %s\n", m.Node, m.Kind, m.Via.Edge, m.Via.On)
		}
	}
	if len(r.ResidualExternalEffects) == 0 {
		p("residual external effects: none\n")
	} else {
		p("residual external effects (still standing in the counterfactual):\n")
		for _, e := range r.ResidualExternalEffects {
			p("  - %s %s %s\n", e.Node, e.Op, e.Target)
		}
	}
	if v := r.Verdicts; v != nil {
		if v.Observed != "" {
			p("verdict: observed %s, counterfactual %s\n", v.Observed, v.Counterfactual)
		}
		for _, n := range v.Nodes {
			if fmt.Sprint(n.Observed) == fmt.Sprint(n.Counterfactual) {
				continue
			}
			p("  %s %s: %s -> %s\n", n.Source, n.Node, verdictList(n.Observed), verdictList(n.Counterfactual))
		}
	}
	if d := r.Drift; d != nil {
		p("drift: %d resolved, %d remaining, %d introduced\n", len(d.Resolved), len(d.Remaining), len(d.Introduced))
		for _, g := range []struct {
			name string
			fs   []Finding
		}{{"resolved", d.Resolved}, {"remaining", d.Remaining}, {"introduced", d.Introduced}} {
			for _, f := range g.fs {
				ev := ""
				if f.EventID != "" {
					ev = " " + f.EventID
				}
				p("  %-10s %s %s%s: %s\n", g.name, f.Severity, f.Code, ev, f.Message)
			}
		}
	}
	p("note: %s\n", r.Notice)
	return bw.Flush()
}

func verdictList(vs []nodeVerdict) string {
	if len(vs) == 0 {
		return "(none)"
	}
	var s []string
	for _, v := range vs {
		x := v.Verdict
		if v.Rule != "" {
			x += " (" + v.Rule + ")"
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

// WriteText writes the ranking as a table.
func (r *RankResult) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d action(s) ranked by blast radius (compensation size, then not-replayable nodes, then id)\n", r.Total)
	fmt.Fprintf(bw, "%5s  %8s  %7s  %7s  %9s  %s\n", "rank", "removes", "actions", "not-rep", "residual", "activity (tool)")
	for _, e := range r.Ranking {
		tool := ""
		if e.Tool != "" {
			tool = " (" + e.Tool + ")"
		}
		fmt.Fprintf(bw, "%5d  %8d  %7d  %7d  %9s  %s%s\n", e.Rank, e.CompensationSize, e.CompensationActivities, e.NotReplayable,
			strconv.FormatFloat(e.SynergyResidual, 'f', 6, 64), e.Activity, tool)
	}
	if len(r.Ranking) < r.Total {
		fmt.Fprintf(bw, "(%d more; --top 0 lists all)\n", r.Total-len(r.Ranking))
	}
	return bw.Flush()
}
