package replay

import (
	"encoding/json"

	"github.com/agent-trace-witness/witness/graph"
)

// kindOf classifies a graph node. The capture session activity is the run
// itself, not an action of it, and the seal is its plan: neither is
// removable nor counted as an action.
func kindOf(n *graph.Node) Kind {
	switch {
	case n.HasType(graph.WCaptureSession), n.HasType(graph.ProvPlan):
		return KindOther
	case n.HasType(graph.ProvActivity):
		return KindActivity
	case n.HasType(graph.ProvAgent), n.HasType(graph.ProvSoftwareAgent):
		return KindAgent
	case n.HasType(graph.ProvEntity):
		return KindEntity
	}
	return KindOther
}

// depPreds maps the PROV dependency predicates to replay's edges.
var depPreds = []struct {
	iri  string
	edge Edge
}{
	{graph.ProvUsed, EdgeUsed},
	{graph.ProvWasGeneratedBy, EdgeWasGeneratedBy},
	{graph.ProvWasInformedBy, EdgeWasInformedBy},
	{graph.ProvWasDerivedFrom, EdgeWasDerivedFrom},
}

// toolHints are the explicit MCP annotations replay reads.
type toolHints struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
	Idempotent  *bool `json:"idempotentHint"`
}

// recordsOf converts a graph to replay records. A tool call's annotations
// are those of the tool definition entity it used (witness:annotations,
// the canonical JSON of the definition's MCP annotations); only explicit
// values count (destructiveHint true, idempotentHint false), and neither
// when the tool is marked readOnlyHint true.
func recordsOf(g *graph.Graph) []Record {
	recs := make([]Record, len(g.Nodes))
	for i, n := range g.Nodes {
		r := Record{ID: n.ID, Kind: kindOf(n), Tool: n.Value(graph.OtelToolName)}
		for _, p := range depPreds {
			for _, t := range n.Props[p.iri] {
				if t.IRI != "" {
					r.Deps = append(r.Deps, Dep{Edge: p.edge, On: t.IRI})
				}
			}
		}
		if r.Kind == KindEntity && n.HasType(graph.WExternalEffect) {
			r.Effect = &EffectFact{Op: n.Value(graph.WEffectOp), Target: n.Value(graph.WEffectTarget)}
		}
		if r.Kind == KindActivity {
			for _, u := range n.Refs(graph.ProvUsed) {
				def := g.Node(u)
				if def == nil || !def.HasType(graph.WToolDefinition) {
					continue
				}
				var h toolHints
				// MCP: destructiveHint and idempotentHint are meaningful
				// only when readOnlyHint is false; a read-only tool
				// changes nothing, whatever the other hints say.
				if raw := def.Value(graph.WAnnotations); raw != "" && json.Unmarshal([]byte(raw), &h) == nil && (h.ReadOnly == nil || !*h.ReadOnly) {
					if h.Destructive != nil && *h.Destructive {
						r.Destructive = true
					}
					if h.Idempotent != nil && !*h.Idempotent {
						r.NotIdempotent = true
					}
				}
			}
		}
		recs[i] = r
	}
	return recs
}

// counterfactualGraph returns the observed graph without the compensation
// set: member nodes go, so do relation nodes (prov:Association and the like)
// that only members referred to, and every reference to a node that went.
// Nodes that keep all their references are shared with g, not copied.
func counterfactualGraph(g *graph.Graph, gone func(string) bool) *graph.Graph {
	referrers := map[string]int{} // relation node -> references from kept nodes
	referred := map[string]bool{}
	for _, n := range g.Nodes {
		for _, vals := range n.Props {
			for _, t := range vals {
				if t.IRI == "" {
					continue
				}
				referred[t.IRI] = true
				if !gone(n.ID) {
					referrers[t.IRI]++
				}
			}
		}
	}
	drop := func(n *graph.Node) bool {
		if gone(n.ID) {
			return true
		}
		// A relation node (neither activity, entity nor agent) that only
		// removed nodes pointed to describes a relation that no longer holds.
		return kindOf(n) == KindOther && !n.HasType(graph.WCaptureSession) && !n.HasType(graph.ProvPlan) &&
			referred[n.ID] && referrers[n.ID] == 0
	}
	dropped := map[string]bool{}
	for _, n := range g.Nodes {
		if drop(n) {
			dropped[n.ID] = true
		}
	}
	out := &graph.Graph{Nodes: make([]*graph.Node, 0, len(g.Nodes)-len(dropped))}
	for _, n := range g.Nodes {
		if dropped[n.ID] {
			continue
		}
		touched := false
		for _, vals := range n.Props {
			for _, t := range vals {
				if t.IRI != "" && dropped[t.IRI] {
					touched = true
				}
			}
		}
		if !touched {
			out.Nodes = append(out.Nodes, n)
			continue
		}
		c := &graph.Node{ID: n.ID, Types: n.Types, Props: make(map[string][]graph.Term, len(n.Props))}
		for p, vals := range n.Props {
			var kept []graph.Term
			for _, t := range vals {
				if t.IRI != "" && dropped[t.IRI] {
					continue
				}
				kept = append(kept, t)
			}
			if len(kept) > 0 {
				c.Props[p] = kept
			}
		}
		out.Nodes = append(out.Nodes, c)
	}
	return out
}
