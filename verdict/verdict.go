// Package verdict holds the per-node verdicts that a verdict source (the
// firewall's what-if policy, or an integrator's own check) gives about the
// nodes of a graph, and the interface such a source implements. replay
// shows them in its verdict overlay; firewall produces them. Both import
// this package, so neither needs the other.
package verdict

import "github.com/agent-trace-witness/witness/graph"

// Node is one verdict a source gives about one node, e.g. a firewall
// policy decision on a message.
type Node struct {
	Verdict string `json:"verdict"`          // the source's own vocabulary (allow, deny, warn, ...)
	Rule    string `json:"rule,omitempty"`   // the rule or check that decided
	Reason  string `json:"reason,omitempty"` // why, in the source's words
}

// Source feeds per-node verdicts into replay's verdict overlay. Replay
// calls it on the observed and on the counterfactual graph; a source must
// be deterministic and read only the graph it is given. The map is keyed by
// node IRI.
type Source interface {
	Name() string
	Verdicts(g *graph.Graph) (map[string][]Node, error)
}
