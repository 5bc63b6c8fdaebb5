package replay

import (
	"github.com/agent-trace-witness/witness/graph"
)

// kindOf classifies a graph node. The capture session activity is the run
// itself, not an action of it, and the seal is its plan: neither is
// removable nor counted as an action.
func kindOf(n *graph.Node) kind { return kindOfTypes(n.Types) }

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
func recordsOf(g *graph.Graph) []record {
	var rb recordBuilder
	rb.recs = make([]record, 0, len(g.Nodes))
	rb.slab = make([]dep, 0, len(g.Nodes)*2)
	for _, n := range g.Nodes {
		rb.add(n)
	}
	return rb.finish()
}

// toolFlags are the explicit hints of one tool definition.
type toolFlags struct{ destructive, notIdempotent bool }

// recordBuilder turns nodes into records one at a time, then gives
// activities the hints of the tool definitions they used.
type recordBuilder struct {
	recs []record
	// Dependencies of all nodes share one growing slab; each record keeps
	// a capped window of it (older windows stay valid when it grows).
	slab []dep
	// defs are the tool definitions (a small map): a call's prov:used
	// targets are checked against it at the end.
	defs map[string]toolFlags
}

func (rb *recordBuilder) add(n *graph.Node) {
	if n.HasType(graph.WToolDefinition) {
		if rb.defs == nil {
			rb.defs = map[string]toolFlags{}
		}
		rb.defs[n.ID] = toolFlagsOf([]byte(n.Value(graph.WAnnotations)))
	}
	r := record{ID: n.ID, Kind: kindOf(n)}
	effect := false
	for _, t := range n.Types {
		if t == graph.WExternalEffect {
			effect = true
		}
	}
	var op, target string
	var maybe []dep
	start := len(rb.slab)
	// One pass over the properties (their order does not matter: the
	// index sorts dependents and keeps the smallest edge of a pair).
	for p, vals := range n.Props {
		use, edge := predUse(p)
		switch use {
		case useDep: // kept after the switch
		case useMaybe:
			for _, t := range vals {
				if t.IRI != "" {
					maybe = append(maybe, dep{Edge: edge, On: t.IRI})
				}
			}
			continue
		case useTool:
			r.Tool = firstLiteral(vals)
			continue
		case useEffectOp:
			op = firstLiteral(vals)
			continue
		case useEffectTarget:
			target = firstLiteral(vals)
			continue
		default:
			// useEventID: the engine reads event ids from the graph;
			// useAnnotations: read above, on a tool definition.
			continue
		}
		for _, t := range vals {
			if t.IRI == "" {
				continue
			}
			rb.slab = append(rb.slab, dep{Edge: edge, On: t.IRI})
		}
	}
	if len(rb.slab) > start {
		r.Deps = rb.slab[start:len(rb.slab):len(rb.slab)]
	}
	r.Maybe = maybe
	if r.Kind == kindEntity && effect {
		r.Effect = &effectFact{Op: op, Target: target}
	}
	rb.recs = append(rb.recs, r)
}

// finish gives each activity the hints of the tool definitions it used
// (its prov:used dependencies) and returns the records.
func (rb *recordBuilder) finish() []record {
	if len(rb.defs) == 0 {
		return rb.recs
	}
	for i := range rb.recs {
		r := &rb.recs[i]
		if r.Kind != kindActivity {
			continue
		}
		for _, d := range r.Deps {
			if d.Edge != edgeUsed {
				continue
			}
			if f, ok := rb.defs[d.On]; ok {
				r.Destructive = r.Destructive || f.destructive
				r.NotIdempotent = r.NotIdempotent || f.notIdempotent
			}
		}
	}
	return rb.recs
}

// firstLiteral is the first literal's lexical form among vals (the node's
// canonical order), or "".
func firstLiteral(vals []graph.Term) string {
	for _, t := range vals {
		if t.IRI == "" {
			return t.Lex
		}
	}
	return ""
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
		return kindOf(n) == kindOther && !n.HasType(graph.WCaptureSession) && !n.HasType(graph.ProvPlan) &&
			referred[n.ID] && referrers[n.ID] == 0
	}
	dropped := map[string]bool{}
	for _, n := range g.Nodes {
		if drop(n) {
			dropped[n.ID] = true
		}
	}
	return graph.Without(g, func(id string) bool { return dropped[id] })
}
