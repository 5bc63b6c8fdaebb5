package replay

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// streamFixtures are the graph documents both engines read: the session
// graph, the committed fixture, graphs of recorded logs and a synthetic
// log, each as WriteJSONLD writes it (streamed) and re-indented (read
// whole).
func streamFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	add := func(name string, g *graph.Graph) {
		var buf bytes.Buffer
		if err := g.WriteJSONLD(&buf); err != nil {
			t.Fatal(err)
		}
		docs[name] = buf.Bytes()
		var ind bytes.Buffer
		ind.WriteString(" ")
		ind.Write(buf.Bytes())
		docs[name+" (indented)"] = ind.Bytes()
	}
	add("session", sessionGraph(t))
	fixture, err := os.ReadFile(filepath.Join("testdata", "session.jsonld"))
	if err != nil {
		t.Fatal(err)
	}
	docs["testdata/session.jsonld"] = fixture
	logs := []string{
		"../graph/testdata/captured/server-everything.jsonl",
		"../graph/testdata/mcp/surface.jsonl",
	}
	demo, _ := filepath.Glob("../testdata/demo/agent/*/*/events.jsonl")
	logs = append(logs, demo...)
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Build(eventlog.NewReader(f, filepath.Base(p)), graph.Options{})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		add(p, g)
	}
	g, _ := synthGraph(t, 400, 7, "syn", false)
	add("synthetic", g)
	return docs
}

// synthGraph builds the graph of a synthetic log (synthlog: events, seed,
// named name) and, when doc is set, its JSON-LD document.
func synthGraph(t *testing.T, events int, seed uint64, name string, doc bool) (*graph.Graph, []byte) {
	t.Helper()
	var syn bytes.Buffer
	if err := synthlog.Generate(&syn, events, seed, name); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(eventlog.NewReader(&syn, name+".jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !doc {
		return g, nil
	}
	var b bytes.Buffer
	if err := g.WriteJSONLD(&b); err != nil {
		t.Fatal(err)
	}
	return g, b.Bytes()
}

// render is every output replay gives for an engine: the ranking (JSON and
// text) and the counterfactual of each node and of a few event ids (JSON
// and text, or the error).
func render(t *testing.T, e *Engine, queries []string) string {
	t.Helper()
	var b strings.Builder
	r := e.Rank(0)
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		res, err := e.Counterfactual(Options{Remove: []string{q}})
		if err != nil {
			b.WriteString("error: " + err.Error() + "\n")
			continue
		}
		if err := WriteJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		if err := res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestEngineJSONLDEqualsEngine holds NewEngineJSONLD (no graph held) to
// NewEngine on ReadJSONLD's graph: the same bytes for every ranking and
// counterfactual, and the same read errors.
func TestEngineJSONLDEqualsEngine(t *testing.T) {
	docs := streamFixtures(t)
	compared := 0
	for name, doc := range docs {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		old, err := NewEngine(g)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		eng, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		queries := []string{"e1", "e3", "e6", "e99999", "nope"}
		for _, n := range g.Nodes {
			queries = append(queries, n.ID)
		}
		want, got := render(t, old, queries), render(t, eng, queries)
		if got != want {
			t.Errorf("%s: outputs differ (%d bytes stream, %d bytes graph)", name, len(got), len(want))
		}
		// a name table of one slot at first: grown many times
		small, err := newEngineJSONLD(bytes.NewReader(doc), "g.jsonld", 1, engineBuilderOptions{Referrers: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := render(t, small, queries); got != want {
			t.Errorf("%s: outputs differ with a name table grown from one slot", name)
		}
		compared += len(queries)
	}
	if compared < 500 {
		t.Fatalf("only %d counterfactuals compared", compared)
	}
}

// TestEngineJSONLDErrors: a damaged document is refused with ReadJSONLD's
// error, and what needs the graph is refused, not wrong.
func TestEngineJSONLDErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := sessionGraph(t).WriteJSONLD(&buf); err != nil {
		t.Fatal(err)
	}
	doc := buf.Bytes()
	first := bytes.Index(doc, []byte(`{"@id":`))
	second := first + 1 + bytes.Index(doc[first+1:], []byte(`{"@id":`))
	end := bytes.Index(doc[second:], []byte(`},{"@id":`)) + second + 1
	dup := append(append(append([]byte{}, doc[:end]...), ','), doc[second:]...)
	cut := doc[:len(doc)/2]
	for name, d := range map[string][]byte{"duplicate": dup, "cut": cut, "not json": []byte("{]")} {
		_, want := graph.ReadJSONLD(bytes.NewReader(d), "g.jsonld")
		_, got := NewEngineJSONLD(bytes.NewReader(d), "g.jsonld")
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	eng, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Counterfactual(Options{Remove: []string{"e6"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.WriteDOT(&bytes.Buffer{}, r); err == nil {
		t.Error("WriteDOT without a graph: no error")
	}
	if _, err := eng.Counterfactual(Options{Remove: []string{"e6"}, Judge: fakeJudge{}}); err == nil {
		t.Error("Judge without a graph: no error")
	}
	if eng.CounterfactualGraph(r) != nil {
		t.Error("CounterfactualGraph without a graph: not nil")
	}
}

// TestEngineJSONLDMemory: the engine read without the graph keeps much
// less than the graph it replaces (heap in use after a GC, a generous
// bound: under 60% of ReadJSONLD's graph plus NewEngine's index).
func TestEngineJSONLDMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 20k-event graph")
	}
	_, doc := synthGraph(t, 20000, 3, "mem", true)
	whole := memtest.Held(func() any {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEngine(g)
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
	streamed := memtest.Held(func() any {
		e, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
	runtime.KeepAlive(doc) // the document stays in both measurements
	t.Logf("heap held: graph and engine %d KiB, engine read straight %d KiB", whole>>10, streamed>>10)
	if streamed*10 > whole*6 {
		t.Errorf("engine read straight holds %d KiB, graph and engine %d KiB", streamed>>10, whole>>10)
	}
}

// TestEngineBuilderBatches: a graph of many batches of the builder's
// pipeline (batchNodes nodes each, more than batchesInFlight of them)
// gives NewEngine's engine; a builder discarded mid-scan ends its worker.
func TestEngineBuilderBatches(t *testing.T) {
	g, doc := synthGraph(t, 4000, 3, "batches", true)
	if len(g.Nodes) < (batchesInFlight+1)*batchNodes {
		t.Fatalf("only %d nodes: not enough batches", len(g.Nodes))
	}
	old, err := NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngineJSONLD(bytes.NewReader(doc), "g.jsonld")
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"e1", "e5", "e1500", "e2999", g.Nodes[len(g.Nodes)/2].ID, g.Nodes[len(g.Nodes)-1].ID}
	if want, got := render(t, old, queries), render(t, eng, queries); got != want {
		t.Errorf("outputs differ (%d bytes stream, %d bytes graph)", len(got), len(want))
	}
	b := NewEngineBuilder()
	n := 0
	err = graph.ScanJSONLDView(bytes.NewReader(doc), "g.jsonld", func(v *graph.NodeView) error {
		if n++; n > 3*batchNodes+7 {
			return io.EOF
		}
		b.Add(v)
		return nil
	})
	if err != io.EOF {
		t.Fatalf("scan: %v", err)
	}
	b.Discard()
	if b.work != nil {
		t.Fatal("the worker was not ended")
	}
}
