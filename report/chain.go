package report

import (
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/why"
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
	Ref   string `json:"ref,omitempty"`   // what `witness why` calls it: LOGNAME:EVENT ("fs:e7"), or EVENT with one log
	Seq   int64  `json:"seq"`             // the event's position in its log; -1 for none
	Label string `json:"label"`
	Kind  string `json:"kind"` // activity, entity, agent
	// What and Text are the step in words, as `witness why` prints it:
	// its kind ("tool call", "model turn") and an excerpt of its content.
	What string `json:"what,omitempty"`
	Text string `json:"text,omitempty"`
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
// WhyExplainer, the default, is package why's answer.
type Explainer interface {
	Explain(g *graph.Graph, node string) (*Chain, error)
}

// WhyExplainer explains with why.Explain (the chain `witness why` prints,
// across the channels of a joined run) and keeps at most MaxSteps nodes
// (default 24), nearest causes first.
type WhyExplainer struct {
	MaxSteps int
}

// Explain implements Explainer.
func (x WhyExplainer) Explain(g *graph.Graph, node string) (*Chain, error) {
	max := x.MaxSteps
	if max <= 0 {
		max = 24
	}
	wc, err := why.Explain(g, node, why.Options{MaxSteps: max + 1})
	if err != nil {
		return nil, err
	}
	return fromWhy(g, wc, max), nil
}

// fromWhy turns why's chain (the node first, then its causes, nearest
// first) into a report chain: the causes farthest first, the node last,
// each step linked to the causes why reached from it. At most max steps
// are kept (max <= 0: all).
func fromWhy(g *graph.Graph, wc *why.Chain, max int) *Chain {
	steps := wc.Chain
	c := &Chain{Node: wc.Node}
	if len(steps) > 0 {
		c.Node = steps[0].IRI
	}
	if max > 0 && len(steps) > max {
		steps, c.Truncated = steps[:max], true
	}
	n := len(steps)
	idx := make(map[string]int, n)
	for i := n - 1; i >= 0; i-- {
		ws := steps[i]
		st := Step{Node: ws.IRI, Ref: ws.Ref(), Seq: -1, Label: ws.Kind + " " + ws.Ref(), Kind: "entity",
			What: strings.ReplaceAll(ws.Kind, "_", " "), Text: ws.Excerpt}
		if gn := g.Node(ws.IRI); gn != nil {
			st.Event, st.Seq, st.Label, st.Kind = graph.NodeEvent(gn), graph.NodeSeq(gn), graph.NodeLabel(gn), graph.DrawKind(gn)
		}
		idx[ws.IRI] = len(c.Steps)
		c.Steps = append(c.Steps, st)
	}
	for _, ws := range steps {
		f, ok1 := idx[ws.From]
		t, ok2 := idx[ws.IRI]
		if ws.From == "" || !ok1 || !ok2 || f == t {
			continue
		}
		rel := ws.Via
		if i := strings.IndexByte(rel, ':'); i >= 0 {
			rel = rel[i+1:]
		}
		if ws.Maybe {
			rel += "?"
		}
		c.Steps[f].Links = append(c.Steps[f].Links, Link{Rel: rel, To: t})
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
	return c
}
