package replay

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Format and Version identify replay's JSON output (docs/replay.md).
const (
	format     = "witness-replay"
	rankFormat = "witness-replay-rank"
	version    = 1
)

// notice is printed with every counterfactual: replay reasons about the
// evidence, it does not act on the world.
const notice = "replay computes a counterfactual over the evidence graph only: it never re-runs the agent or a server, " +
	"never undoes an effect and never re-creates what was deleted, overwritten, sent or paid"

// Options are the inputs of one counterfactual.
type Options struct {
	// Remove names the nodes to remove: full IRIs, or event ids ("e12")
	// naming the primary node of that event (docs/replay.md).
	Remove []string
	// Judge, when set, verifies the observed and counterfactual graphs for
	// the drift overlay and the verify verdicts.
	Judge Judge
	// Sources feed per-node verdicts into the verdict overlay.
	Sources []VerdictSource
}

// Result is one counterfactual (docs/replay.md, format witness-replay v1).
type Result struct {
	Format                  string          `json:"format"`
	V                       int             `json:"v"`
	Graph                   GraphSummary    `json:"graph"`
	Removed                 []Removed       `json:"removed"`
	CompensationSet         []Member        `json:"compensation_set"`
	CompensationActions     int             `json:"compensation_actions"`
	SynergyResidual         float64         `json:"synergy_residual"`
	ResidualExternalEffects []EffectRef     `json:"residual_external_effects"`
	NotReplayable           []NotReplayable `json:"not_replayable"`
	// Ambiguous lists the nodes outside the compensation set that may
	// depend on a member through an ambiguous link (a server request made
	// while several host requests were open); PossiblyRemoved is what
	// would join the set if they did. Both are absent when empty.
	Ambiguous       []Ambiguous `json:"ambiguous,omitempty"`
	PossiblyRemoved []Member    `json:"possibly_removed,omitempty"`
	Notice          string      `json:"notice"`
	Drift           *Drift      `json:"drift,omitempty"`
	Verdicts        *Verdicts   `json:"verdicts,omitempty"`

	ix *index
	in []bool // compensation set membership by node index
}

// GraphSummary counts the observed graph.
type GraphSummary struct {
	Nodes           int `json:"nodes"`
	Actions         int `json:"actions"` // prov:Activity nodes other than the capture session
	ExternalEffects int `json:"external_effects"`
}

// Removed is one node named by --remove.
type Removed struct {
	Requested string `json:"requested"` // as given on the command line
	Node      string `json:"node"`
	Kind      string `json:"kind"`
	Tool      string `json:"tool,omitempty"`
}

// Member is one node of the compensation set and why it is there.
type Member struct {
	Node string `json:"node"`
	Kind string `json:"kind"`
	Tool string `json:"tool,omitempty"`
	Via  *Via   `json:"via,omitempty"` // absent for a removed node
}

// Via is the dependency edge by which a member was reached: Member Edge On.
type Via struct {
	Edge string `json:"edge"`
	On   string `json:"on"`
}

// Ambiguous is a node outside the compensation set that may depend on
// members of it: the evidence names candidates and does not say which one
// holds (docs/replay.md "Ambiguous links").
type Ambiguous struct {
	Node string `json:"node"`
	Kind string `json:"kind"`
	Tool string `json:"tool,omitempty"`
	// Link is the ambiguous predicate: witness:duringCandidate or
	// witness:possiblyInfluencedBy.
	Link string `json:"link"`
	// On are the members the node may depend on; Candidates every object
	// of Link on the node, in the set or not.
	On         []string `json:"on"`
	Candidates []string `json:"candidates"`
}

// EffectRef is an external effect.
type EffectRef struct {
	Node   string `json:"node"`
	Op     string `json:"op"`
	Target string `json:"target,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// NotReplayable is a member of the compensation set whose effect cannot be
// undone, with the reasons.
type NotReplayable struct {
	Node    string   `json:"node"`
	Kind    string   `json:"kind"`
	Tool    string   `json:"tool,omitempty"`
	Op      string   `json:"op,omitempty"`
	Target  string   `json:"target,omitempty"`
	Reasons []string `json:"reasons"`
}

// Engine holds a graph indexed for replay; build it once to run several
// counterfactuals or a ranking.
type Engine struct {
	g  *graph.Graph // nil for an engine read by NewEngineJSONLD
	ix *index
	// events are the witness:eventId literals of the nodes when g is nil.
	events *eventTable
}

// NewEngine indexes g. The graph must have unique node ids (graph.Graph
// guarantees it).
func NewEngine(g *graph.Graph) (*Engine, error) {
	ix, err := buildIndex(recordsOf(g))
	if err != nil {
		return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("index graph: %w", err), "")
	}
	return &Engine{g: g, ix: ix}, nil
}

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) that
// `witness replay` sets when it reads a graph with NewEngineJSONLD and
// GOMEMLIMIT is unset. At a million events the engine's live heap peaks
// at about 420 MB (name table, per-node arrays and the index being built;
// it was 680 MB with a record of strings per node, when the collector's
// default target, twice the live heap, let the process reach 1.3 GiB).
// Under the limit it collects earlier, so the peak RSS stays under 1 GiB
// at the cost of more collections (docs/design/scale.md). A larger graph
// goes over the limit: the collector then bounds its own CPU share and the
// heap grows as needed.
const MemoryLimit = 800 << 20

// errNoGraph is returned by the methods that need the graph on an engine
// made by NewEngineJSONLD.
var errNoGraph = errors.New("replay engine read without its graph (NewEngineJSONLD): judges, verdict sources and DOT need NewEngine")

// resolve maps each --remove value to a node index.
func (e *Engine) resolve(reqs []string) ([]int32, []Removed, error) {
	if len(reqs) == 0 {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("nothing to remove"), "name a node with --remove IRI (or an event id such as e3)")
	}
	var seeds []int32
	var rm []Removed
	for _, q := range reqs {
		i, err := e.resolveOne(q)
		if err != nil {
			return nil, nil, err
		}
		r := e.ix.recs[i]
		seeds = append(seeds, i)
		rm = append(rm, Removed{Requested: q, Node: e.ix.ids[i], Kind: r.Kind.String(), Tool: r.Tool})
	}
	sort.SliceStable(rm, func(i, j int) bool { return rm[i].Node < rm[j].Node })
	return seeds, rm, nil
}

func (e *Engine) resolveOne(q string) (int32, error) {
	ix := e.ix
	i, ok := ix.lookup(q)
	if !ok && q != "" && !strings.Contains(q, ":") {
		// event id shorthand
		hits := e.events.find(q)
		for _, n := range e.nodes() {
			for _, v := range n.Props[graph.WEventID] {
				if v.IRI == "" && v.Lex == q {
					j, _ := ix.lookup(n.ID)
					hits = append(hits, j)
				}
			}
		}
		if len(hits) > 1 {
			var ids []string
			for _, h := range hits {
				ids = append(ids, ix.ids[h])
			}
			sort.Strings(ids)
			return 0, exitcode.New(exitcode.Usage, fmt.Errorf("event id %q names %d nodes (one per session)", q, len(hits)),
				"name one by its IRI: "+strings.Join(ids[:min(len(ids), maxSuggestions)], ", "))
		}
		if len(hits) == 1 {
			i, ok = hits[0], true
		}
	}
	if !ok {
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("--remove %q: no such node in the graph", q), e.hint(q))
	}
	if k := ix.recs[i].Kind; !k.Removable() {
		what := k.String()
		if k == kindOther {
			what = "not an action or a datum (session, seal or relation node)"
		}
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("--remove %q: the node is %s and cannot be removed; only activities and entities can", q, what), e.hint(q))
	}
	return i, nil
}

func (e *Engine) hint(q string) string {
	near := e.ix.nearest(q)
	if len(near) == 0 {
		return "the graph has no activity or entity to remove"
	}
	return "nearest removable ids: " + strings.Join(near, ", ")
}

// Counterfactual computes the counterfactual of removing opts.Remove.
func (e *Engine) Counterfactual(opts Options) (*Result, error) {
	seeds, rm, err := e.resolve(opts.Remove)
	if err != nil {
		return nil, err
	}
	ix := e.ix
	c := ix.compensate(seeds)
	res := &Result{
		Format:                  format,
		V:                       version,
		Removed:                 rm,
		CompensationSet:         []Member{},
		ResidualExternalEffects: []EffectRef{},
		NotReplayable:           []NotReplayable{},
		Notice:                  notice,
		ix:                      ix,
		in:                      c.in,
	}
	res.Graph.Nodes = ix.n()
	for i := range ix.recs {
		r, id := &ix.recs[i], ix.ids[i]
		if r.Kind == kindActivity {
			res.Graph.Actions++
		}
		if r.Effect != nil {
			res.Graph.ExternalEffects++
			if !c.in[i] {
				res.ResidualExternalEffects = append(res.ResidualExternalEffects, EffectRef{Node: id, Op: r.Effect.Op, Target: r.Effect.Target, Tool: r.Tool})
			}
		}
		if !c.in[i] {
			continue
		}
		m := Member{Node: id, Kind: r.Kind.String(), Tool: r.Tool}
		if c.via[i] >= 0 {
			m.Via = &Via{Edge: c.edge[i].Name(), On: ix.ids[c.via[i]]}
		}
		res.CompensationSet = append(res.CompensationSet, m)
		if r.Kind == kindActivity {
			res.CompensationActions++
		}
		if ix.notReplayable(int32(i)) {
			res.NotReplayable = append(res.NotReplayable, ix.notReplayableOf(int32(i)))
		}
	}
	res.SynergyResidual = residual(int64(res.CompensationActions), int64(res.Graph.Actions))
	res.Ambiguous, res.PossiblyRemoved = ix.ambiguous(c.in)
	if opts.Judge == nil && len(opts.Sources) == 0 {
		return res, nil
	}
	if e.g == nil {
		// a judge of the document the engine was read from, and no
		// source: judged without the graph
		dj, ok := opts.Judge.(documentJudge)
		if !ok || len(opts.Sources) > 0 {
			return nil, errNoGraph
		}
		if err := e.judgeDocument(res, dj); err != nil {
			return nil, err
		}
		return res, nil
	}
	cf := counterfactualGraph(e.g, res.removes)
	v := &Verdicts{Nodes: []NodeVerdicts{}}
	if opts.Judge != nil {
		obs, err := opts.Judge.Judge(e.g)
		if err != nil {
			return nil, fmt.Errorf("verify observed graph: %w", err)
		}
		cfj, err := opts.Judge.Judge(cf)
		if err != nil {
			return nil, fmt.Errorf("verify counterfactual graph: %w", err)
		}
		res.Drift = drift(obs, cfj)
		v.Observed, v.Counterfactual = obs.Verdict, cfj.Verdict
		v.Changed = obs.Verdict != cfj.Verdict
	}
	nv, err := nodeVerdicts(opts.Sources, e.g, cf, res.removes)
	if err != nil {
		return nil, fmt.Errorf("verdict overlay: %w", err)
	}
	v.Nodes = nv
	for _, n := range nv {
		if fmt.Sprint(n.Observed) != fmt.Sprint(n.Counterfactual) {
			v.Changed = true
		}
	}
	res.Verdicts = v
	return res, nil
}

// ambiguous finds the nodes outside the set in that have an ambiguous
// link to a member, and the closure beyond the set of those nodes (what
// would also go if the links held), each first reached through its link.
func (ix *index) ambiguous(in []bool) ([]Ambiguous, []Member) {
	var out []Ambiguous
	var seeds []int32
	firstOn := map[int32]Via{}
	for k := 0; k < len(ix.maybe); {
		l := ix.maybe[k]
		end := k
		for end < len(ix.maybe) && ix.maybe[end].from == l.from && ix.maybe[end].edge == l.edge {
			end++
		}
		group := ix.maybe[k:end]
		k = end
		if in[l.from] {
			continue
		}
		a := Ambiguous{Node: ix.ids[l.from], Kind: ix.recs[l.from].Kind.String(), Tool: ix.recs[l.from].Tool, Link: l.edge.Name(), On: []string{}, Candidates: []string{}}
		for _, g := range group {
			a.Candidates = append(a.Candidates, ix.ids[g.on])
			if in[g.on] {
				a.On = append(a.On, ix.ids[g.on])
			}
		}
		if len(a.On) == 0 {
			continue
		}
		out = append(out, a)
		if _, ok := firstOn[l.from]; !ok {
			firstOn[l.from] = Via{Edge: a.Link, On: a.On[0]}
			seeds = append(seeds, l.from)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	c := ix.closureOf(seeds, in)
	var members []Member
	for i, member := range c.in {
		if !member {
			continue
		}
		r := &ix.recs[i]
		m := Member{Node: ix.ids[i], Kind: r.Kind.String(), Tool: r.Tool}
		if c.via[i] >= 0 {
			m.Via = &Via{Edge: c.edge[i].Name(), On: ix.ids[c.via[i]]}
		} else {
			v := firstOn[int32(i)]
			m.Via = &v
		}
		members = append(members, m)
	}
	return out, members
}

// removes reports whether node id is in the compensation set.
func (r *Result) removes(id string) bool {
	if r.ix == nil {
		return false
	}
	i, ok := r.ix.lookup(id)
	return ok && r.in[i]
}

// CounterfactualGraph returns the graph of the counterfactual run.
// It is nil for an engine made by NewEngineJSONLD.
func (e *Engine) CounterfactualGraph(r *Result) *graph.Graph {
	if e.g == nil {
		return nil
	}
	return counterfactualGraph(e.g, r.removes)
}

// RankResult is the blast-radius ranking (format witness-replay-rank v1).
type RankResult struct {
	Format  string       `json:"format"`
	V       int          `json:"v"`
	Graph   GraphSummary `json:"graph"`
	Method  RankStats    `json:"method"`
	Total   int          `json:"total"` // activities ranked
	Ranking []RankEntry  `json:"ranking"`
}

// Rank computes one counterfactual per action and ranks them by blast
// radius. top > 0 keeps only the first top entries.
func (e *Engine) Rank(top int) *RankResult {
	entries, total, st := e.ix.rank(rankBudgetWords, top)
	res := &RankResult{Format: rankFormat, V: version, Method: st, Total: total, Ranking: entries}
	res.Graph.Nodes = e.ix.n()
	for i := range e.ix.recs {
		r := &e.ix.recs[i]
		if r.Kind == kindActivity {
			res.Graph.Actions++
		}
		if r.Effect != nil {
			res.Graph.ExternalEffects++
		}
	}
	if top > 0 && len(res.Ranking) > top {
		res.Ranking = res.Ranking[:top]
	}
	if res.Ranking == nil {
		res.Ranking = []RankEntry{}
	}
	return res
}

// nodes are the graph's nodes, none when the engine holds no graph.
func (e *Engine) nodes() []*graph.Node {
	if e.g == nil {
		return nil
	}
	return e.g.Nodes
}
