package report

import (
	"fmt"
	"sort"

	"github.com/agent-trace-witness/witness/graph"
)

// Chain is the causal chain of a finding: the nodes that led to it, oldest
// first, the finding's own node last.
type Chain struct {
	Node  string `json:"node"` // the node the chain explains
	Steps []Step `json:"steps"`
	// Truncated says that more causes exist than the chain shows.
	Truncated bool `json:"truncated,omitempty"`
}

// Step is one node of a chain.
type Step struct {
	Node  string `json:"node"`
	Event string `json:"event,omitempty"` // the event id ("e7") of the node, if an event made it
	Seq   int64  `json:"seq"`             // the event's position in its log; -1 for none
	Label string `json:"label"`
	Kind  string `json:"kind"` // activity, entity, agent
	// Links name the relations from this step to earlier steps
	// ("used e5", "wasInformedBy e3").
	Links []Link `json:"links,omitempty"`
}

// Link is one causal relation from a step to an earlier one.
type Link struct {
	Rel string `json:"rel"` // used, wasGeneratedBy, wasInformedBy, during?, ...
	To  int    `json:"to"`  // index of the earlier step in Steps
}

// Explainer gives the causal chain of a node: what `witness why` prints.
// GraphExplainer implements it from the graph's links; the `why` package
// (issue 15) will implement it with its own reasoning, and the command
// picks one.
type Explainer interface {
	Explain(g *graph.Graph, node string) (*Chain, error)
}

// GraphExplainer walks the graph's causal relations (graph.CausalRelations:
// used, wasGeneratedBy, wasInformedBy, wasDerivedFrom, wasInfluencedBy and
// the ambiguous candidates) back from the node, breadth first, and keeps
// at most MaxSteps nodes (default 24), nearest causes first.
type GraphExplainer struct {
	MaxSteps int
}

// Explain implements Explainer.
func (x GraphExplainer) Explain(g *graph.Graph, node string) (*Chain, error) {
	start := g.Node(node)
	if start == nil {
		return nil, fmt.Errorf("explain: no node %s in the graph", node)
	}
	max := x.MaxSteps
	if max <= 0 {
		max = 24
	}
	rels := graph.CausalRelations()
	type hop struct{ from, to, rel string }
	seen := map[string]bool{node: true}
	order := []string{node}
	var hops []hop
	truncated := false
	for i := 0; i < len(order); i++ {
		n := g.Node(order[i])
		if n == nil {
			continue
		}
		for _, r := range rels {
			for _, to := range n.Refs(r.Pred) {
				t := g.Node(to)
				if t == nil || graph.DrawKind(t) == "" || graph.DrawKind(t) == "agent" {
					continue
				}
				hops = append(hops, hop{n.ID, to, r.Label})
				if seen[to] {
					continue
				}
				if len(order) >= max {
					truncated = true
					continue
				}
				seen[to] = true
				order = append(order, to)
			}
		}
	}
	nodes := make([]*graph.Node, 0, len(order))
	for _, id := range order {
		nodes = append(nodes, g.Node(id))
	}
	// oldest first: by event position, then IRI; the explained node last
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if (a.ID == node) != (b.ID == node) {
			return b.ID == node
		}
		sa, sb := graph.NodeSeq(a), graph.NodeSeq(b)
		if sa != sb {
			return sa < sb
		}
		return a.ID < b.ID
	})
	idx := make(map[string]int, len(nodes))
	c := &Chain{Node: node, Truncated: truncated}
	for i, n := range nodes {
		idx[n.ID] = i
		c.Steps = append(c.Steps, Step{Node: n.ID, Event: graph.NodeEvent(n), Seq: graph.NodeSeq(n), Label: graph.NodeLabel(n), Kind: graph.DrawKind(n)})
	}
	for _, h := range hops {
		f, ok1 := idx[h.from]
		t, ok2 := idx[h.to]
		if !ok1 || !ok2 || f == t {
			continue
		}
		c.Steps[f].Links = append(c.Steps[f].Links, Link{Rel: h.rel, To: t})
	}
	for i := range c.Steps {
		ls := c.Steps[i].Links
		sort.Slice(ls, func(a, b int) bool {
			if ls[a].To != ls[b].To {
				return ls[a].To < ls[b].To
			}
			return ls[a].Rel < ls[b].Rel
		})
	}
	return c, nil
}
