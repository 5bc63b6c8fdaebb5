package verify

import (
	"sort"

	"github.com/agent-trace-witness/witness/graph"
)

// This file is what injection-provenance knows of every node of a joined
// graph: whether it is downstream of untrusted content, through the
// dependency edges and through the ambiguous joins (docs/design/causal-join.md,
// "Injection provenance through ambiguous joins"). An ambiguous join is a
// node that depends on one of several candidates, the witness cannot say
// which: an MCP tools/call several model tool calls may have asked for
// (witness:joinCandidate), a model input that carries back a result
// several MCP calls gave alike (witness:possiblyInfluencedBy to their
// results). Whichever candidate it is, a node whose every candidate is
// downstream of untrusted content is too, as if joined; a node whose
// candidates differ is maybe downstream, and so is what depends on it.

// trust is a node's standing: clean, maybe downstream of untrusted content
// (through an ambiguous join whose candidates differ), or downstream of it
// (an untrusted source or what depends on one).
type trust uint8

const (
	trustClean trust = iota
	trustMaybe
	trustUntrusted
)

// taint is the trust of every node of a graph, for one plan's untrusted
// sources.
type taint struct {
	state map[string]trust
	// groups are the ambiguous joins: a node → its candidates (sorted,
	// once each); inGroup the other way round
	groups  map[string][]string
	inGroup map[string][]string
	// hit and maybeHit count, per ambiguous join, the candidates that are
	// untrusted, and untrusted or maybe
	hit, maybeHit map[string]int
	// origin is, for a node that is maybe downstream, the ambiguous join
	// whose candidates differ in trust that makes it so
	origin map[string]string
}

// joinGroups returns the ambiguous joins of g: every MCP tools/call the
// join left ambiguous, with the model tool calls that may have asked for
// it, and every model input with the MCP results it may carry back.
func joinGroups(g *graph.Graph) map[string][]string {
	out := map[string][]string{}
	for _, n := range g.Nodes {
		var cands []string
		switch {
		case n.HasType(graph.WToolCall) && n.Value(graph.WJoin) == graph.JoinAmbiguous:
			cands = n.Refs(graph.WJoinCandidate)
		case n.HasType(graph.WModelMessage):
			for _, r := range n.Refs(graph.WPossiblyInfluencedBy) {
				if t := g.Node(r); t != nil && t.HasType(graph.WResult) {
					cands = append(cands, r)
				}
			}
		}
		if len(cands) == 0 {
			continue
		}
		cands = append([]string(nil), cands...)
		sort.Strings(cands)
		out[n.ID] = compactSorted(cands)
	}
	return out
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// taintStep is a node whose trust rose from old to new, to be passed on.
type taintStep struct {
	iri      string
	old, new trust
}

// newTaint computes the trust of every node of g: sources are untrusted;
// a node is untrusted when a node it depends on is, or when every
// candidate of its ambiguous join is; maybe when a node it depends on is
// maybe, or when some candidate of its join is untrusted or maybe.
// dependents maps a node to the nodes that depend on it (causalPreds).
// Nodes are visited in a fixed order (sources, dependents and joins in
// IRI order), so the same graph gives the same origins.
func newTaint(g *graph.Graph, sources map[string]int, dependents map[string][]string) *taint {
	t := &taint{state: map[string]trust{}, groups: joinGroups(g), inGroup: map[string][]string{},
		hit: map[string]int{}, maybeHit: map[string]int{}, origin: map[string]string{}}
	gids := make([]string, 0, len(t.groups))
	for id := range t.groups {
		gids = append(gids, id)
	}
	sort.Strings(gids)
	for _, id := range gids {
		for _, c := range t.groups[id] {
			t.inGroup[c] = append(t.inGroup[c], id)
		}
	}
	ids := make([]string, 0, len(sources))
	for id := range sources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var queue []taintStep
	raise := func(iri string, to trust, origin string) {
		old := t.state[iri]
		if to <= old {
			return
		}
		t.state[iri] = to
		if to == trustMaybe {
			t.origin[iri] = origin
		}
		queue = append(queue, taintStep{iri, old, to})
	}
	for _, id := range ids {
		raise(id, trustUntrusted, "")
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		deps := dependents[st.iri]
		sort.Strings(deps)
		for _, d := range deps {
			raise(d, st.new, t.origin[st.iri])
		}
		for _, gid := range t.inGroup[st.iri] {
			if st.old == trustClean {
				t.maybeHit[gid]++
			}
			if st.new == trustUntrusted {
				t.hit[gid]++
			}
			switch {
			case t.hit[gid] == len(t.groups[gid]):
				raise(gid, trustUntrusted, "")
			case t.hit[gid] > 0:
				raise(gid, trustMaybe, gid)
			case t.maybeHit[gid] > 0:
				raise(gid, trustMaybe, t.origin[st.iri])
			}
		}
	}
	return t
}

// trustWord is how a finding names a candidate's trust.
func (t *taint) trustWord(iri string) string {
	switch t.state[iri] {
	case trustUntrusted:
		return "untrusted"
	case trustMaybe:
		return "maybe untrusted"
	}
	return "trusted"
}
