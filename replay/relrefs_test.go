package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
)

// docJudge judges a graph document held in memory (DocumentJudge), and
// counts the scans of the document that dropped asked for: its one
// finding names the nodes kept (a digest of their sorted IRIs), so that
// any difference in the nodes a counterfactual drops shows in the drift.
type docJudge struct {
	doc   []byte
	scans int
}

// nodeJudgement is the judgement of a graph of the node IRIs ids.
func nodeJudgement(ids []string) *Judgement {
	slices.Sort(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return &Judgement{Verdict: fmt.Sprintf("nodes-%d", len(ids)), Findings: []Finding{{Code: "nodes", Severity: "notice", Message: hex.EncodeToString(sum[:])}}}
}

func (d *docJudge) Judge(g *graph.Graph) (*Judgement, error) {
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	return nodeJudgement(ids), nil
}

func (d *docJudge) JudgeDocument(drop func(iri []byte) bool) (*Judgement, error) {
	var ids []string
	err := graph.ScanJSONLDView(bytes.NewReader(d.doc), "g.jsonld", func(v *graph.NodeView) error {
		if drop == nil || !drop(v.ID) {
			ids = append(ids, string(v.ID))
		}
		return nil
	})
	return nodeJudgement(ids), err
}

func (d *docJudge) ScanDocument(visit func(v *graph.NodeView) error) error {
	d.scans++
	return graph.ScanJSONLDView(bytes.NewReader(d.doc), "g.jsonld", visit)
}

// graphJudge hides the document methods of a judge (the in-memory path).
type graphJudge struct{ j Judge }

func (g graphJudge) Judge(gr *graph.Graph) (*Judgement, error) { return g.j.Judge(gr) }

// relDoc is a JSON-LD document of the nodes given (each a JSON object
// without its braces), in that order.
func relDoc(nodes ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"@context":{"otel":"https://w3id.org/agent-trace-witness/otel#","prov":"http://www.w3.org/ns/prov#","rdf":"http://www.w3.org/1999/02/22-rdf-syntax-ns#","witness":"https://w3id.org/agent-trace-witness/ns#","xsd":"http://www.w3.org/2001/XMLSchema#"},"@graph":[`)
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{" + n + "}")
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// hostileRelDocs are hand-made documents for the referrers of relation
// nodes: a relation node referring to itself, referred by nodes before and
// after it in document order, by a removable and a kept node, twice by one
// node, through a dependency, an ambiguous link, a literal's predicate and
// a predicate replay does not read, an IRI naming no node, a literal that
// spells a relation's IRI; sorted and not.
func hostileRelDocs() map[string][]byte {
	nodes := []string{
		`"@id":"urn:x/a1","@type":"prov:Activity","prov:qualifiedAssociation":[{"@id":"urn:x/r1"},{"@id":"urn:x/r2"}],"witness:eventId":"e1","witness:x":{"@id":"urn:x/r5"}`,
		`"@id":"urn:x/a2","@type":"prov:Activity","prov:used":{"@id":"urn:x/e1"},"prov:qualifiedAssociation":{"@id":"urn:x/r1"},"witness:eventId":"e2"`,
		`"@id":"urn:x/a3","@type":"prov:Activity","prov:wasInformedBy":{"@id":"urn:x/a2"},"witness:y":[{"@id":"urn:x/r3"},{"@id":"urn:x/nothing"}],"witness:eventId":"e3"`,
		`"@id":"urn:x/a4","@type":"prov:Activity","witness:eventId":"e4","witness:p":[{"@id":"urn:x/r4"},{"@id":"urn:x/r4"}],"witness:q":{"@id":"urn:x/r4"},"witness:note":"urn:x/r6"`,
		`"@id":"urn:x/a5","@type":"prov:Activity","witness:eventId":"e5","prov:used":{"@id":"urn:x/r7"},"witness:duringCandidate":{"@id":"urn:x/r8"},"otel:toolName":[{"@id":"urn:x/r9"},"t"]`,
		`"@id":"urn:x/a6","@type":"prov:Activity","witness:eventId":[{"@id":"urn:x/r10"},"e6"],"witness:annotations":{"@id":"urn:x/r10"},"witness:effectOp":{"@id":"urn:x/r11"}`,
		`"@id":"urn:x/agent","@type":"prov:Agent","witness:z":{"@id":"urn:x/r12"}`,
		`"@id":"urn:x/e1","@type":"prov:Entity","prov:wasGeneratedBy":{"@id":"urn:x/a1"},"witness:w":{"@id":"urn:x/r3"}`,
		`"@id":"urn:x/e2","@type":"prov:Entity","prov:wasGeneratedBy":{"@id":"urn:x/a4"},"witness:w":[{"@id":"urn:x/r12"},{"@id":"urn:x/r13"}]`,
		`"@id":"urn:x/plan","@type":"prov:Plan","witness:w":{"@id":"urn:x/r2"}`,
		`"@id":"urn:x/r1","@type":"prov:Association","prov:agent":{"@id":"urn:x/agent"},"prov:hadPlan":{"@id":"urn:x/plan"}`,
		`"@id":"urn:x/r13","@type":"prov:Association","prov:used":{"@id":"urn:x/e2"},"witness:self":{"@id":"urn:x/r13"},"witness:v":{"@id":"urn:x/r16"}`,
		`"@id":"urn:x/r14","@type":"prov:Association","witness:self":{"@id":"urn:x/r14"}`,
		`"@id":"urn:x/r16","@type":"prov:Association"`,
		`"@id":"urn:x/r2","@type":"prov:Association","witness:self":{"@id":"urn:x/r2"}`,
		`"@id":"urn:x/r3","@type":"prov:Association"`,
		`"@id":"urn:x/r4","@type":"prov:Association","witness:r":{"@id":"urn:x/r5"}`,
		`"@id":"urn:x/r5","@type":"prov:Association"`,
		`"@id":"urn:x/r6","@type":"prov:Association"`,
		`"@id":"urn:x/r7","@type":"prov:Association"`,
		`"@id":"urn:x/r8","@type":"prov:Association"`,
		`"@id":"urn:x/r9","@type":"prov:Association"`,
		`"@id":"urn:x/r10"`,
		`"@id":"urn:x/r11","@type":"witness:Other"`,
		`"@id":"urn:x/r12","@type":"prov:Association"`,
		`"@id":"urn:x/session","@type":["prov:Activity","witness:CaptureSession"],"witness:w":{"@id":"urn:x/r3"}`,
		`"@id":"urn:x/z","@type":"prov:Entity","prov:wasDerivedFrom":{"@id":"urn:x/e1"},"witness:w":{"@id":"urn:x/r3"}`,
	}
	docs := map[string][]byte{"hostile sorted": relDoc(nodes...)}
	rev := slices.Clone(nodes)
	slices.Reverse(rev)
	docs["hostile reversed"] = relDoc(rev...)
	r := rand.New(rand.NewPCG(17, 3))
	for k := range 3 {
		sh := slices.Clone(nodes)
		r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		docs[fmt.Sprintf("hostile shuffled %d", k)] = relDoc(sh...)
	}
	return docs
}

// droppedIDs is the sorted IRIs of the nodes of e that drop names.
func droppedIDs(e *Engine, drop func(iri []byte) bool) []string {
	var out []string
	for _, id := range e.ix.ids {
		if drop([]byte(id)) {
			out = append(out, id)
		}
	}
	return out
}

// TestReferrersEqualScan: for every fixture graph and the hostile
// documents, and for every removable node removed alone and with a
// neighbour, the nodes a counterfactual judged on the document drops are the same from
// the referrers the builder kept (no scan of the document), from the
// scan of the document (the builder without them) and from
// counterfactualGraph on the graph read whole; the outputs with a judge
// are the same bytes on the three engines. The paths that read the
// document (the scan, the judge), costlier, are compared on every request
// of the hostile documents, every fifth of the graphs of at most 100
// nodes as written and every 60th of the others; the
// referrers on every one.
func TestReferrersEqualScan(t *testing.T) {
	docs := streamFixtures(t)
	for name, doc := range hostileRelDocs() {
		docs[name] = doc
	}
	compared, judged, relDropped := 0, 0, 0
	for name, doc := range docs {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mem, err := NewEngine(g)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kept, err := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1, engineBuilderOptions{Referrers: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		scanned, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if kept.ix.relRefOff == nil || scanned.ix.relRefOff != nil {
			t.Fatalf("%s: referrers kept %v, without the option %v", name, kept.ix.relRefOff != nil, scanned.ix.relRefOff != nil)
		}
		reqs := [][]string{{"e1"}, {"e2", "e4"}, {"nope"}}
		for i, n := range g.Nodes {
			if k, ok := mem.ix.lookup(n.ID); !ok || !mem.ix.recs[k].Kind.Removable() {
				continue // refused, with a costly hint
			}
			reqs = append(reqs, []string{n.ID})
			if i > 0 && i%3 == 1 {
				reqs = append(reqs, []string{n.ID, g.Nodes[i-1].ID})
			}
		}
		for q, req := range reqs {
			full := strings.HasPrefix(name, "hostile") || q%60 == 0 || q%5 == 0 && len(g.Nodes) <= 100 && !strings.HasSuffix(name, "(indented)")
			want, werr := mem.Counterfactual(Options{Remove: req})
			if werr != nil {
				for _, e := range []*Engine{kept, scanned} {
					if _, err := e.Counterfactual(Options{Remove: req}); err == nil || err.Error() != werr.Error() {
						t.Errorf("%s %v: error %v, want %v", name, req, err, werr)
					}
				}
				continue
			}
			left := map[string]bool{}
			for _, n := range mem.CounterfactualGraph(want).Nodes {
				left[n.ID] = true
			}
			var wantDrop []string
			for _, n := range g.Nodes {
				if !left[n.ID] {
					wantDrop = append(wantDrop, n.ID)
				}
			}
			slices.Sort(wantDrop)
			for _, e := range []*Engine{kept, scanned} {
				if e == scanned && !full {
					continue
				}
				r, err := e.Counterfactual(Options{Remove: req})
				if err != nil {
					t.Fatalf("%s %v: %v", name, req, err)
				}
				dj := &docJudge{doc: doc}
				drop, err := e.dropped(r, dj)
				if err != nil {
					t.Fatalf("%s %v: %v", name, req, err)
				}
				if got := droppedIDs(e, drop); !slices.Equal(got, wantDrop) {
					t.Errorf("%s %v (referrers kept %v): drops %q, want %q", name, req, e == kept, got, wantDrop)
				}
				if e == kept && dj.scans != 0 {
					t.Errorf("%s %v: the referrers were kept, yet the document was scanned %d times", name, req, dj.scans)
				}
			}
			for _, id := range wantDrop {
				if i, ok := mem.ix.lookup(id); ok && !want.in[i] {
					relDropped++
				}
			}
			compared++
			if !full {
				continue
			}
			// the outputs with a judge: the in-memory path against both
			// document paths
			var outs [3]bytes.Buffer
			for k, o := range []struct {
				e *Engine
				j Judge
			}{{mem, graphJudge{&docJudge{}}}, {kept, &docJudge{doc: doc}}, {scanned, &docJudge{doc: doc}}} {
				r, err := o.e.Counterfactual(Options{Remove: req, Judge: o.j})
				if err != nil {
					t.Fatalf("%s %v: %v", name, req, err)
				}
				if err := WriteJSON(&outs[k], r); err != nil {
					t.Fatal(err)
				}
				if err := r.WriteText(&outs[k]); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(outs[1].Bytes(), outs[0].Bytes()) || !bytes.Equal(outs[2].Bytes(), outs[0].Bytes()) {
				t.Errorf("%s %v: outputs with a judge differ\nin memory: %s\nkept:      %s\nscanned:   %s", name, req, outs[0].Bytes(), outs[1].Bytes(), outs[2].Bytes())
			}
			judged++
		}
	}
	t.Logf("%d counterfactuals compared, %d with a judge, %d relation nodes dropped beyond the compensation sets", compared, judged, relDropped)
	if compared < 1000 || judged < 150 || relDropped < 100 {
		t.Fatalf("only %d counterfactuals compared, %d with a judge, %d relation nodes dropped", compared, judged, relDropped)
	}
}

// TestReferrersHostile: on the hand-made documents, the relation nodes
// the counterfactual of each removal drops, from the referrers kept, are
// those the rule says (written out here, not computed), in every document
// order.
func TestReferrersHostile(t *testing.T) {
	cases := []struct {
		remove []string
		drops  []string // beyond the compensation set
	}{
		// a1 goes with e1, a2, a3 and z: r1 (referred by a1 and a2); not
		// r2 (also by itself and the plan), r3 (also by the session), r5
		// (also by r4)
		{[]string{"e1"}, []string{"urn:x/r1"}},
		// a2 with a3: r1 still referred by a1
		{[]string{"e2"}, nil},
		// a4 and e2: r4 (twice by a4, once more by another predicate); r13
		// depends on e2 and goes with it, and r16, which only r13 refers
		// to; r12 is kept by the agent, r14 by itself
		{[]string{"e4"}, []string{"urn:x/r16", "urn:x/r4"}},
		// a5: r7 (by a dependency), r8 (an ambiguous link), r9 (an IRI
		// value of the tool name)
		{[]string{"e5"}, []string{"urn:x/r7", "urn:x/r8", "urn:x/r9"}},
		// a6: r10 (an event id's and an annotation's IRI value: no type, a
		// relation node) and r11 (an effect op's IRI value, a type of no
		// kind)
		{[]string{"e6"}, []string{"urn:x/r10", "urn:x/r11"}},
		// a1 and a4: r1, r4 and r16 go; r5 stays: r4, which refers to it,
		// is dropped but not a member
		{[]string{"e1", "e4"}, []string{"urn:x/r1", "urn:x/r16", "urn:x/r4"}},
	}
	// the referrers of a few relation nodes, each once
	refs := map[string][]string{
		"urn:x/r1":  {"urn:x/a1", "urn:x/a2"},
		"urn:x/r2":  {"urn:x/a1", "urn:x/plan", "urn:x/r2"},
		"urn:x/r3":  {"urn:x/a3", "urn:x/e1", "urn:x/session", "urn:x/z"},
		"urn:x/r4":  {"urn:x/a4"},
		"urn:x/r6":  nil,
		"urn:x/r10": {"urn:x/a6"},
		"urn:x/r13": {"urn:x/e2", "urn:x/r13"},
	}
	for name, doc := range hostileRelDocs() {
		e, err := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1, engineBuilderOptions{Referrers: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ix := e.ix
		for r, i := range ix.relations {
			var got []string
			for _, from := range ix.relRef[ix.relRefOff[r]:ix.relRefOff[r+1]] {
				got = append(got, ix.ids[from])
			}
			if want, ok := refs[ix.ids[i]]; ok && !slices.Equal(got, want) {
				t.Errorf("%s: %s is referred to by %q, want %q", name, ix.ids[i], got, want)
			}
		}
		for _, c := range cases {
			r, err := e.Counterfactual(Options{Remove: c.remove})
			if err != nil {
				t.Fatalf("%s %v: %v", name, c.remove, err)
			}
			drop, err := e.dropped(r, &docJudge{doc: doc})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range droppedIDs(e, drop) {
				if !r.removes(id) {
					got = append(got, id)
				}
			}
			if !slices.Equal(got, c.drops) {
				t.Errorf("%s %v: drops %q beyond the compensation set, want %q", name, c.remove, got, c.drops)
			}
		}
	}
}

// TestReferrersDuplicate: a document that names a node twice is refused
// by the builder that keeps referrers as by the one that does not.
func TestReferrersDuplicate(t *testing.T) {
	for _, doc := range [][]byte{
		relDoc(`"@id":"urn:x/a1","@type":"prov:Activity","prov:qualifiedAssociation":{"@id":"urn:x/r1"}`, `"@id":"urn:x/r1","@type":"prov:Association"`, `"@id":"urn:x/r1","@type":"prov:Entity"`),
		relDoc(`"@id":"urn:x/r1","@type":"prov:Entity"`, `"@id":"urn:x/a1","@type":"prov:Activity","prov:qualifiedAssociation":{"@id":"urn:x/r1"}`, `"@id":"urn:x/r1","@type":"prov:Association"`),
	} {
		_, want := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
		_, got := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1, engineBuilderOptions{Referrers: true})
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}

// FuzzReferrers: for any document both engines read, the nodes the
// counterfactual of each removable node (the first 16) drops are the same
// from the referrers the builder kept as from counterfactualGraph on the
// graph read whole.
func FuzzReferrers(f *testing.F) {
	for _, name := range []string{"hostile sorted", "hostile reversed"} {
		f.Add(hostileRelDocs()[name])
	}
	f.Add(relDoc(`"@id":"urn:x/a","@type":"prov:Activity","witness:p":{"@id":"urn:x/r"}`, `"@id":"urn:x/r","witness:p":{"@id":"urn:x/r"}`))
	f.Add(relDoc(`"@id":"urn:x/r","witness:p":{"@id":"urn:x/a"}`, `"@id":"urn:x/a","@type":"prov:Entity","prov:used":{"@id":"urn:x/r"}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			return
		}
		mem, err := NewEngine(g)
		if err != nil {
			return
		}
		kept, err := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1, engineBuilderOptions{Referrers: true})
		if err != nil {
			return
		}
		tried := 0
		for _, n := range g.Nodes {
			if k, ok := mem.ix.lookup(n.ID); !ok || !mem.ix.recs[k].Kind.Removable() {
				continue
			}
			if tried++; tried > 16 {
				break
			}
			got, wantDrop, scans, _ := dropsBoth(t, mem, kept, g, doc, n.ID)
			if !slices.Equal(got, wantDrop) || scans != 0 {
				t.Fatalf("remove %s: drops %q (%d scans), want %q", n.ID, got, scans, wantDrop)
			}
		}
	})
}

// TestReferrersBatches: a graph of many batches of the builder's pipeline
// (batches reused, their extra property of IRI values included) keeps
// the referrers counterfactualGraph implies, on every 40th removable node.
func TestReferrersBatches(t *testing.T) {
	g, doc := synthGraph(t, 4000, 3, "batches", true)
	if len(g.Nodes) < (batchesInFlight+1)*batchNodes {
		t.Fatalf("only %d nodes: not enough batches", len(g.Nodes))
	}
	mem, err := NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1<<16, engineBuilderOptions{Referrers: true})
	if err != nil {
		t.Fatal(err)
	}
	compared, relDropped := 0, 0
	for i, n := range g.Nodes {
		if k, ok := mem.ix.lookup(n.ID); i%40 != 0 || !ok || !mem.ix.recs[k].Kind.Removable() {
			continue
		}
		got, wantDrop, scans, r := dropsBoth(t, mem, kept, g, doc, n.ID)
		if !slices.Equal(got, wantDrop) || scans != 0 {
			t.Errorf("remove %s: drops %q (%d scans), want %q", n.ID, got, scans, wantDrop)
		}
		compared++
		relDropped += len(wantDrop) - len(r.CompensationSet)
	}
	if compared < 50 || relDropped < 10 {
		t.Fatalf("only %d counterfactuals compared, %d relation nodes dropped", compared, relDropped)
	}
}

// dropsBoth removes node id on mem (an engine over g) and on kept (an
// engine read from doc with the referrers kept): the nodes kept drops
// (sorted), those counterfactualGraph drops on mem, the document scans
// kept's drop set took, and kept's result.
func dropsBoth(t *testing.T, mem, kept *Engine, g *graph.Graph, doc []byte, id string) (got, want []string, scans int, r *Result) {
	t.Helper()
	wr, err := mem.Counterfactual(Options{Remove: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, m := range mem.CounterfactualGraph(wr).Nodes {
		left[m.ID] = true
	}
	for _, m := range g.Nodes {
		if !left[m.ID] {
			want = append(want, m.ID)
		}
	}
	slices.Sort(want)
	r, err = kept.Counterfactual(Options{Remove: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	dj := &docJudge{doc: doc}
	drop, err := kept.dropped(r, dj)
	if err != nil {
		t.Fatal(err)
	}
	return droppedIDs(kept, drop), want, dj.scans, r
}
