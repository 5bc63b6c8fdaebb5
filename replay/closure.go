package replay

import "slices"

// closure is the compensation set of a set of removed nodes: the removed
// nodes and every node that depends on one of them, transitively. in[i] is
// true for members; via[i] says how member i was reached (-1 for a removed
// node, else the index of the member it depends on) and edge[i] by which
// edge. order lists members in breadth-first order from the sorted seeds.
type closure struct {
	in    []bool
	via   []int32
	edge  []edge
	order []int32
}

// compensate computes the closure of seeds over the dependents relation:
// one breadth-first traversal, O(nodes + edges), deterministic because seeds
// are visited in ascending index order and dependents lists are sorted.
func (ix *index) compensate(seeds []int32) *closure { return ix.closureOf(seeds, nil) }

// closureOf is compensate, stopping at the nodes skip marks (which are
// neither members nor traversed): the closure beyond a set already
// computed.
func (ix *index) closureOf(seeds []int32, skip []bool) *closure {
	n := ix.n()
	c := &closure{in: make([]bool, n), via: make([]int32, n), edge: make([]edge, n)}
	sorted := append([]int32(nil), seeds...)
	slices.Sort(sorted)
	for _, s := range sorted {
		if c.in[s] || (skip != nil && skip[s]) {
			continue
		}
		c.in[s] = true
		c.via[s] = -1
		c.order = append(c.order, s)
	}
	for head := 0; head < len(c.order); head++ {
		u := c.order[head]
		deps, vias := ix.dependents(u)
		for k, v := range deps {
			if c.in[v] || (skip != nil && skip[v]) {
				continue
			}
			c.in[v] = true
			c.via[v] = u
			c.edge[v] = vias[k]
			c.order = append(c.order, v)
		}
	}
	return c
}
