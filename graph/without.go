package graph

// Without returns g without the nodes drop names and without every
// reference to them: a kept node loses the IRI values naming a dropped
// node, and a property left with no value. Nodes that keep all their
// references are shared with g, not copied. It is the one reading of "the
// graph without these nodes" that replay's counterfactual graph and
// verify's counterfactual check (ViewWithout, on a scan) share.
func Without(g *Graph, drop func(id string) bool) *Graph {
	out := &Graph{Nodes: make([]*Node, 0, len(g.Nodes))}
	for _, n := range g.Nodes {
		if drop(n.ID) {
			continue
		}
		touched := false
		for _, vals := range n.Props {
			for _, t := range vals {
				if t.IRI != "" && drop(t.IRI) {
					touched = true
				}
			}
		}
		if !touched {
			out.Nodes = append(out.Nodes, n)
			continue
		}
		c := &Node{ID: n.ID, Types: n.Types, Props: make(map[string][]Term, len(n.Props))}
		for p, vals := range n.Props {
			var kept []Term
			for _, t := range vals {
				if t.IRI != "" && drop(t.IRI) {
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

// ViewWithout is Without for one node of a scan (ScanJSONLDView): nil when
// drop names the node, v itself when it names none of its references, else
// a view of the node without them, valid until the next call on the same
// ViewWithout (its arrays are reused). The zero value is ready to use.
type ViewWithout struct {
	v     NodeView
	props []PropView
	terms []TermView
}

// Apply returns v without what drop names (see ViewWithout).
func (f *ViewWithout) Apply(v *NodeView, drop func(iri []byte) bool) *NodeView {
	if drop(v.ID) {
		return nil
	}
	touched := false
	for _, p := range v.Props {
		for _, t := range p.Vals {
			if len(t.IRI) > 0 && drop(t.IRI) {
				touched = true
			}
		}
	}
	if !touched {
		return v
	}
	clear(f.props)
	clear(f.terms)
	f.props, f.terms = f.props[:0], f.terms[:0]
	for _, p := range v.Props {
		t0 := len(f.terms)
		for _, t := range p.Vals {
			if len(t.IRI) > 0 && drop(t.IRI) {
				continue
			}
			f.terms = append(f.terms, t)
		}
		if len(f.terms) > t0 {
			// a window of the terms so far: a later append that grows
			// f.terms leaves it valid
			f.props = append(f.props, PropView{Pred: p.Pred, Vals: f.terms[t0:len(f.terms):len(f.terms)]})
		}
	}
	// a fresh view: not the node v was read from (asNode), which still
	// holds every reference
	f.v = NodeView{ID: v.ID, Types: v.Types, Props: f.props}
	return &f.v
}
