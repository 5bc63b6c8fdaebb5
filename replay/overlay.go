package replay

import (
	"sort"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/verdict"
)

// nodeVerdict is one verdict a source gives about one node (see package
// verdict, which firewall and replay share).
type nodeVerdict = verdict.Node

// VerdictSource feeds per-node verdicts into the verdict overlay (see
// package verdict).
type VerdictSource = verdict.Source

// Finding is one verify finding, in the form replay compares: two findings
// are the same when all their fields are equal.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Class    string `json:"class,omitempty"`
	EventID  string `json:"event_id,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Clause   string `json:"seal_clause,omitempty"`
	Message  string `json:"message"`
}

// Judgement is verify's outcome on one graph.
type Judgement struct {
	Verdict  string
	Findings []Finding
}

// Judge verifies a graph against the seal the caller chose (package verify
// through a small adapter in the CLI). It must be deterministic.
type Judge interface {
	Judge(g *graph.Graph) (*Judgement, error)
}

// Drift is the drift overlay: verify's findings on the observed and the
// counterfactual graph side by side.
type Drift struct {
	Observed       RunJudgement `json:"observed"`
	Counterfactual RunJudgement `json:"counterfactual"`
	Resolved       []Finding    `json:"resolved"`   // on the observed run only
	Remaining      []Finding    `json:"remaining"`  // on both
	Introduced     []Finding    `json:"introduced"` // on the counterfactual run only
}

// RunJudgement summarises verify's outcome on one run.
type RunJudgement struct {
	Verdict  string `json:"verdict"`
	Findings int    `json:"findings"`
}

// Verdicts is the verdict overlay.
type Verdicts struct {
	Observed       string         `json:"observed,omitempty"`       // verify verdict of the observed run ("" without a seal)
	Counterfactual string         `json:"counterfactual,omitempty"` // verify verdict of the counterfactual run
	Changed        bool           `json:"changed"`
	Nodes          []NodeVerdicts `json:"nodes"` // per node, per source, sorted by node then source
}

// NodeVerdicts is what one source said about one node in both runs.
type NodeVerdicts struct {
	Node           string        `json:"node"`
	Source         string        `json:"source"`
	Removed        bool          `json:"removed"` // the node is in the compensation set
	Observed       []nodeVerdict `json:"observed"`
	Counterfactual []nodeVerdict `json:"counterfactual"`
}

func findingKey(f Finding) string {
	b, _ := canon.Marshal(f)
	return string(b)
}

// drift compares two judgements. Findings are kept in the order of the
// canonical JSON of each finding, so the overlay is deterministic whatever
// order the judge used.
func drift(obs, cf *Judgement) *Drift {
	d := &Drift{
		Observed:       RunJudgement{Verdict: obs.Verdict, Findings: len(obs.Findings)},
		Counterfactual: RunJudgement{Verdict: cf.Verdict, Findings: len(cf.Findings)},
		Resolved:       []Finding{},
		Remaining:      []Finding{},
		Introduced:     []Finding{},
	}
	count := func(fs []Finding) map[string]int {
		m := map[string]int{}
		for _, f := range fs {
			m[findingKey(f)]++
		}
		return m
	}
	oc, cc := count(obs.Findings), count(cf.Findings)
	for _, f := range sortedFindings(obs.Findings) {
		k := findingKey(f)
		if cc[k] > 0 {
			cc[k]--
			d.Remaining = append(d.Remaining, f)
		} else {
			d.Resolved = append(d.Resolved, f)
		}
	}
	for _, f := range sortedFindings(cf.Findings) {
		k := findingKey(f)
		if oc[k] > 0 {
			oc[k]--
			continue
		}
		d.Introduced = append(d.Introduced, f)
	}
	return d
}

func sortedFindings(fs []Finding) []Finding {
	out := append([]Finding(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool { return findingKey(out[i]) < findingKey(out[j]) })
	return out
}

// nodeVerdicts runs every source on both graphs and pairs their verdicts by
// node.
func nodeVerdicts(sources []VerdictSource, obs, cf *graph.Graph, gone func(string) bool) ([]NodeVerdicts, error) {
	out := []NodeVerdicts{}
	for _, s := range sources {
		ov, err := s.Verdicts(obs)
		if err != nil {
			return nil, err
		}
		cv, err := s.Verdicts(cf)
		if err != nil {
			return nil, err
		}
		ids := map[string]bool{}
		for id := range ov {
			ids[id] = true
		}
		for id := range cv {
			ids[id] = true
		}
		for id := range ids {
			o, c := ov[id], cv[id]
			if o == nil {
				o = []nodeVerdict{}
			}
			if c == nil {
				c = []nodeVerdict{}
			}
			out = append(out, NodeVerdicts{Node: id, Source: s.Name(), Removed: gone(id), Observed: o, Counterfactual: c})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Source < out[j].Source
	})
	return out, nil
}
