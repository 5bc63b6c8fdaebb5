package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// surfaceEngine indexes the graph of graph's issue 11 fixture
// (graph/testdata/mcp/surface.jsonl: resources, prompts, sampling,
// elicitation, roots, during and during_candidates). Its events:
//
//	e6 resources/read → e7 contents (e38 an agent message quoting them)
//	e12 summarize call; e13 sampling request during it, e15 the answer;
//	    e17 write effect and e18 result after the answer
//	e19 delete_file call; e20 read effect; e21 elicitation during it,
//	    e22 accept; e23 delete effect and e24 result after the answer
//	e27 summarize call and e28 resources/read open together; e29
//	    elicitation with both as candidates, e30 decline; e31 e28's
//	    contents; e32 sampling during e27, e33 an error answer; e34 e27's
//	    result
func surfaceEngine(t testing.TB) (*Engine, string) {
	t.Helper()
	f, err := os.Open(filepath.Join(testrepo.Root(t), "graph", "testdata", "mcp", "surface.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := graph.Build(graph.NewEventSource(f, "surface.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := ""
	for _, n := range g.OfType(graph.WCaptureSession) {
		base = graph.SessionIRI(n.Value(graph.WSession)) + "/"
	}
	e, err := NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	return e, base
}

func short(base string, ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, strings.TrimPrefix(m.Node, base))
	}
	return out
}

// TestSurfaceCompensation: removing a resource read, a sampling answer or
// an elicitation answer gives its compensation set through the graph's
// links, never more (docs/replay.md "Server requests and host answers").
func TestSurfaceCompensation(t *testing.T) {
	e, base := surfaceEngine(t)
	cases := []struct {
		name, remove string
		want         []string // compensation set
		notRep       []string
		ambiguous    []string // nodes with an ambiguous link to the set
		possibly     []string
	}{
		// the read and what the log says was made of it; nothing links a
		// later turn or call to it, so nothing else goes
		{name: "resource read", remove: "e6", want: []string{"answer/e7", "message/e38", "request/e6"}},
		{name: "resource contents", remove: "e7", want: []string{"answer/e7", "message/e38"}},
		// the sampling answer: what the server did after it in that call
		// (its effect and result), not the call, the request or the turn
		{name: "sampling answer", remove: "e15", want: []string{"effect/e17", "msg/e15", "result/e18"}},
		// the elicitation answer: the deletion after it (not replayable)
		// and the result; the read before it stays
		{name: "elicitation answer", remove: "e22", want: []string{"effect/e23", "result/e24", "user-input/e22"}, notRep: []string{"effect/e23"}},
		// the call removes the server's requests made during it and their
		// answers, notes included
		{name: "call with sampling", remove: "e12", want: []string{"call/e12", "effect/e17", "msg/e13", "msg/e15", "note/e14", "note/e16", "result/e18", "turn/e15"}},
		// an answer to a request with candidates: the candidates' later
		// outputs may depend on it; reported, not removed
		{name: "ambiguous answer", remove: "e30", want: []string{"user-input/e30"},
			ambiguous: []string{"answer/e31", "result/e34"}, possibly: []string{"answer/e31", "result/e34"}},
		// a candidate call: the elicitation may have been made during it
		{name: "candidate call", remove: "e27", want: []string{"call/e27", "msg/e32", "msg/e33", "result/e34", "turn/e33"},
			ambiguous: []string{"request/e29"}, possibly: []string{"request/e29", "user-input/e30"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.Counterfactual(Options{Remove: []string{c.remove}})
			if err != nil {
				t.Fatal(err)
			}
			if got := short(base, r.CompensationSet); !slices.Equal(got, c.want) {
				t.Errorf("compensation set %v, want %v", got, c.want)
			}
			var nr, amb []string
			for _, n := range r.NotReplayable {
				nr = append(nr, strings.TrimPrefix(n.Node, base))
			}
			for _, a := range r.Ambiguous {
				amb = append(amb, strings.TrimPrefix(a.Node, base))
				if len(a.On) == 0 || len(a.Candidates) < len(a.On) {
					t.Errorf("ambiguous %+v", a)
				}
			}
			if !slices.Equal(nr, c.notRep) {
				t.Errorf("not replayable %v, want %v", nr, c.notRep)
			}
			if !slices.Equal(amb, c.ambiguous) {
				t.Errorf("ambiguous %v, want %v", amb, c.ambiguous)
			}
			if got := short(base, r.PossiblyRemoved); !slices.Equal(got, c.possibly) {
				t.Errorf("possibly removed %v, want %v", got, c.possibly)
			}
			for _, m := range r.PossiblyRemoved {
				if m.Via == nil || r.removes(m.Node) {
					t.Errorf("possibly removed %+v", m)
				}
			}
		})
	}
}

// TestSurfaceAmbiguousDetail: the entries name the link and its candidates;
// the text and DOT outputs show them; the output is deterministic.
func TestSurfaceAmbiguousDetail(t *testing.T) {
	e, base := surfaceEngine(t)
	r, err := e.Counterfactual(Options{Remove: []string{"e27"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ambiguous) != 1 {
		t.Fatalf("ambiguous %+v", r.Ambiguous)
	}
	a := r.Ambiguous[0]
	if a.Link != "witness:duringCandidate" || !slices.Equal(a.On, []string{base + "call/e27"}) ||
		!slices.Equal(a.Candidates, []string{base + "call/e27", base + "request/e28"}) || a.Kind != "activity" {
		t.Fatalf("ambiguous %+v", a)
	}
	if v := r.PossiblyRemoved[0].Via; v.Edge != "witness:duringCandidate" || v.On != base+"call/e27" {
		t.Fatalf("via %+v", v)
	}
	if v := r.PossiblyRemoved[1].Via; v.Edge != "prov:wasGeneratedBy" || v.On != base+"request/e29" {
		t.Fatalf("via %+v", v)
	}
	var txt, dot, js1, js2 bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "ambiguous links (never guessed") || !strings.Contains(txt.String(), "possibly removed, if those links held: 2 node(s)") {
		t.Fatalf("text:\n%s", txt.String())
	}
	if err := e.WriteDOT(&dot, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dot.String(), `tooltip="ambiguous"`) || !strings.Contains(dot.String(), "possibly removed through 1 ambiguous link(s) (2 nodes)") {
		t.Fatal("DOT does not show the possibly removed nodes")
	}
	if err := WriteJSON(&js1, r); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		r2, err := e.Counterfactual(Options{Remove: []string{"e27"}})
		if err != nil {
			t.Fatal(err)
		}
		js2.Reset()
		if err := WriteJSON(&js2, r2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(js1.Bytes(), js2.Bytes()) {
			t.Fatal("replay output differs between runs")
		}
	}
	if !strings.Contains(js1.String(), `"ambiguous":[{"candidates":[`) {
		t.Fatalf("json lacks ambiguous: %s", js1.String())
	}
	// a counterfactual without ambiguity keeps the v1 output unchanged
	r3, err := e.Counterfactual(Options{Remove: []string{"e15"}})
	if err != nil {
		t.Fatal(err)
	}
	js2.Reset()
	if err := WriteJSON(&js2, r3); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js2.String(), "ambiguous") || strings.Contains(js2.String(), "possibly_removed") {
		t.Fatalf("unambiguous output names ambiguity: %s", js2.String())
	}
}

// TestSurfaceRankAgrees: the ranking of every action agrees with removing
// it alone, on a graph with the new edges and cycles (a call informs the
// sampling turn whose answer influences the call's result).
func TestSurfaceRankAgrees(t *testing.T) {
	e, _ := surfaceEngine(t)
	rk := e.Rank(0)
	if rk.Total == 0 {
		t.Fatal("nothing ranked")
	}
	for _, en := range rk.Ranking {
		r, err := e.Counterfactual(Options{Remove: []string{en.Activity}})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(r.CompensationSet)) != en.CompensationSize || int64(r.CompensationActions) != en.CompensationActivities || int64(len(r.NotReplayable)) != en.NotReplayable {
			t.Errorf("%s: rank %d/%d/%d, remove %d/%d/%d", en.Activity, en.CompensationSize, en.CompensationActivities, en.NotReplayable,
				len(r.CompensationSet), r.CompensationActions, len(r.NotReplayable))
		}
	}
}
