package why_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/why"
)

// runs are the graphs of the equivalence test: fixtures of one log, the
// joined demo runs, the synthetic injection run and synthetic logs.
func runs(t *testing.T) map[string][]graph.LogInput {
	t.Helper()
	out := map[string][]graph.LogInput{}
	read := func(p string) graph.LogInput {
		b, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		return graph.LogInput{Name: p, Data: b}
	}
	singles, _ := filepath.Glob("../testdata/firewall/*.events.jsonl")
	singles = append(singles, "../graph/testdata/captured/server-everything.jsonl", "../graph/testdata/mcp/surface.jsonl")
	for _, p := range singles {
		p, _ = filepath.Rel("..", p)
		out[p] = []graph.LogInput{read(p)}
	}
	demos, _ := filepath.Glob("../testdata/demo/agent/*")
	for _, d := range demos {
		logs, _ := filepath.Glob(filepath.Join(d, "*", "events.jsonl"))
		var in []graph.LogInput
		for _, p := range logs {
			p, _ = filepath.Rel("..", p)
			in = append(in, read(p))
		}
		if len(in) > 0 {
			d, _ = filepath.Rel("..", d)
			out[d] = in
			out[d+"/first"] = in[:1]
		}
	}
	if len(out) < 5 {
		t.Fatalf("only %d fixture runs found", len(out))
	}
	model, mcp := synthlog.InjectionRun(frozen)
	out["injection"] = []graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}
	for i, n := range []int{50, 150} {
		var b bytes.Buffer
		if err := synthlog.Generate(&b, n, uint64(i+1), "synth"); err != nil {
			t.Fatal(err)
		}
		out["synth-"+string(rune('a'+i))] = []graph.LogInput{{Name: "synth/events.jsonl", Data: b.Bytes()}}
	}
	return out
}

// answer is a chain as text and JSON, or the error's code and text.
func answer(c *why.Chain, err error) string {
	if err != nil {
		return fmt.Sprintf("error %d: %s", exitcode.Of(err), err.Error())
	}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		return "write: " + err.Error()
	}
	j, _ := json.MarshalIndent(c, "", "  ")
	return b.String() + string(j)
}

// TestExplainJSONLDEqualsExplain: the chain read from a graph document in
// two passes is the chain of Explain on the whole graph, for every node
// with an event id (as its IRI, its qualified and its bare event id) and a
// few refs that do not resolve, on canonical documents and (one ref in
// five) on an indented document, which is read whole, with the default
// and a short step bound.
func TestExplainJSONLDEqualsExplain(t *testing.T) {
	for name, logs := range runs(t) {
		r, err := graph.BuildRun(logs, graph.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g := r.Graph
		doc, err := g.JSONLD()
		if err != nil {
			t.Fatal(err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, doc, "", " "); err != nil {
			t.Fatal(err)
		}
		// the graph as a reader of its document sees it (LogsOf)
		g, err = graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatal(err)
		}
		refs := []string{"e99999", "nolog:e1", "urn:witness:nothing", ""}
		labels := map[string]bool{}
		for _, l := range why.LogsOf(g) {
			labels[l.Label] = true
		}
		for _, n := range g.Nodes {
			id := n.Value(graph.WEventID)
			if id == "" {
				continue
			}
			refs = append(refs, n.ID, id)
			for l := range labels {
				refs = append(refs, l+":"+id)
			}
		}
		sort.Strings(refs)
		checked, chains := 0, 0
		for ri, ref := range refs {
			for _, max := range []int{0, 2} {
				opts := why.Options{MaxSteps: max}
				want := answer(why.Explain(g, ref, opts))
				for di, d := range [][]byte{doc, indented.Bytes()} {
					if di == 1 && (max != 0 || ri%5 != 0) {
						continue
					}
					got := answer(why.ExplainJSONLD(bytes.NewReader(d), "g.jsonld", ref, opts))
					if got != want {
						t.Fatalf("%s: why %q (max %d, document %d):\n--- two passes\n%s\n--- whole graph\n%s", name, ref, max, di, got, want)
					}
					checked++
				}
				if want[:5] != "error" {
					chains++
				}
			}
		}
		if chains == 0 {
			t.Errorf("%s: no chain compared", name)
		}
		t.Logf("%s: %d nodes, %d answers compared, %d chains", name, len(g.Nodes), checked, chains)
	}
}

// TestSubgraphSmall: the subgraph of a chain in a long synthetic log is a
// small part of the graph.
func TestSubgraphSmall(t *testing.T) {
	g, doc := synthDoc(t, 2000, 7)
	sub, err := why.Subgraph(bytes.NewReader(doc), "g.jsonld", "e1500", why.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Nodes) == 0 || len(sub.Nodes)*20 > len(g.Nodes) {
		t.Fatalf("subgraph of e1500: %d nodes of %d", len(sub.Nodes), len(g.Nodes))
	}
}

// TestExplainJSONLDBoundedMemory: the two passes over the graph of a
// synthetic log hold much less heap than the graph itself. The growth
// from 20k to 60k events is compared, so that the fixed buffers of the
// scan's pipeline (graph.ScanJSONLD: batches in flight, readers) cancel
// out.
func TestExplainJSONLDBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 20k- and 60k-event graphs")
	}
	// little garbage, so that the heap in use is about the live heap
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	measure := func(events int) (wholeHeap, used uint64) {
		_, doc := synthDoc(t, events, 3)
		runtime.GC()
		before := memtest.InUse()
		whole, err := graph.ReadJSONLD(bytes.NewReader(doc), "g.jsonld")
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		wholeHeap = memtest.Grown(before, memtest.InUse())
		runtime.KeepAlive(whole)
		whole = nil
		runtime.GC()

		before = memtest.InUse()
		pr := &peakReader{r: bytes.NewReader(doc)}
		c, err := why.ExplainJSONLD(pr, "g.jsonld", fmt.Sprintf("e%d", events*3/4), why.Options{})
		if err != nil || len(c.Chain) == 0 {
			t.Fatalf("%v %v", c, err)
		}
		if pr.heap.N < 8 {
			t.Fatalf("only %d heap samples", pr.heap.N)
		}
		used = memtest.Grown(before, pr.heap.Peak)
		t.Logf("%d events, %d nodes, %d KiB document: whole graph %d KiB in use; two passes %d KiB at the peak (%d samples)",
			events, len(c.Chain), len(doc)>>10, wholeHeap>>10, used>>10, pr.heap.N)
		return wholeHeap, used
	}
	w1, u1 := measure(20000)
	w2, u2 := measure(60000)
	dw, du := int64(w2)-int64(w1), int64(u2)-int64(u1)
	t.Logf("from 20k to 60k events: the whole graph grows by %d KiB, the two passes by %d KiB", dw>>10, du>>10)
	if du*3 > dw {
		t.Fatalf("two passes grew by %d KiB from 20k to 60k events, a third of the whole graph's %d KiB or more", du>>10, dw>>10)
	}
}

// peakReader reads r and samples the heap in use at each read.
type peakReader struct {
	r    *bytes.Reader
	heap memtest.Sampler
}

func (p *peakReader) Read(b []byte) (int, error) {
	p.heap.Sample()
	return p.r.Read(b)
}

func (p *peakReader) Seek(off int64, whence int) (int64, error) { return p.r.Seek(off, whence) }

// TestExplainLogEqualsExplain: the chain of one log streamed into a
// temporary graph and read in two passes is the chain of Explain on
// BuildRun's graph of the log, named by the log as BuildRun names it, for
// every node with an event id and refs that do not resolve; a damaged log
// is refused with the same exit code.
func TestExplainLogEqualsExplain(t *testing.T) {
	tmp := t.TempDir()
	for name, logs := range runs(t) {
		if len(logs) != 1 {
			continue
		}
		r, err := graph.BuildRun(logs, graph.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		refs := []string{"e99999", "nolog:e1", r.Logs[0].Label + ":e1"}
		for i, n := range r.Graph.Nodes {
			if id := n.Value(graph.WEventID); id != "" && i%3 == 0 {
				refs = append(refs, id, n.ID)
			}
		}
		for _, ref := range refs {
			want := answer(why.Explain(r.Graph, ref, why.Options{Logs: r.Logs}))
			got := answer(why.ExplainLog(bytes.NewReader(logs[0].Data), logs[0].Name, ref, graph.Options{}, tmp, why.Options{}))
			if got != want {
				t.Fatalf("%s: why %q:\n--- streamed\n%s\n--- BuildRun\n%s", name, ref, got, want)
			}
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	_, mcp := synthlog.InjectionRun(frozen)
	bad := append(append([]byte{}, mcp...), "{not json\n"...)
	_, werr := graph.BuildRun([]graph.LogInput{{Name: "fs/events.jsonl", Data: bad}}, graph.Options{})
	_, gerr := why.ExplainLog(bytes.NewReader(bad), "fs/events.jsonl", "e3", graph.Options{}, tmp, why.Options{})
	if werr == nil || exitcode.Of(gerr) != exitcode.Of(werr) {
		t.Fatalf("damaged log: BuildRun %v, streamed %v", werr, gerr)
	}
}

// countingReader counts the bytes read from r; after swap is set, the
// next seek to the start replaces r's content with other (a file changed
// between the passes).
type countingReader struct {
	r     *bytes.Reader
	read  int
	other []byte
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.read += n
	return n, err
}

func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	if c.other != nil && whence == io.SeekStart && off > 0 {
		c.r, c.other = bytes.NewReader(c.other), nil
	}
	return c.r.Seek(off, whence)
}

// TestSubgraphReadsSpans: on a document as 'witness graph' writes it, the
// second pass reads the kept nodes' elements only (at the spans the first
// pass saw), not the document again; when the file changed between the
// passes, the answer is a failure, not a wrong chain.
func TestSubgraphReadsSpans(t *testing.T) {
	g, doc := synthDoc(t, 2000, 7)
	chains := 0
	for _, ref := range []string{"e1500", "e1999", "e1998", "e3"} {
		want := answer(why.Explain(g, ref, why.Options{}))
		cr := &countingReader{r: bytes.NewReader(doc)}
		got := answer(why.ExplainJSONLD(cr, "g.jsonld", ref, why.Options{}))
		if got != want {
			t.Fatalf("why %s:\n--- spans\n%s\n--- whole graph\n%s", ref, got, want)
		}
		if cr.read < len(doc) || cr.read > len(doc)+len(doc)/20 {
			t.Errorf("why %s: read %d bytes of a %d-byte document (one pass and the kept elements)", ref, cr.read, len(doc))
		}
		if want[:5] == "error" {
			continue
		}
		chains++
		// the same document shifted by a space after the first pass
		cr = &countingReader{r: bytes.NewReader(doc), other: append([]byte(" "), doc...)}
		_, err := why.ExplainJSONLD(cr, "g.jsonld", ref, why.Options{})
		if exitcode.Of(err) != exitcode.Failure {
			t.Errorf("why %s on a file changed between the passes: %v (exit %d), want exit %d", ref, err, exitcode.Of(err), exitcode.Failure)
		}
	}
	if chains < 2 {
		t.Errorf("%d chains compared, want at least 2", chains)
	}
}

// TestExplainJSONLDBadGraph: a graph the reader refuses is refused with
// the reader's error (exit 3), whatever the node asked for.
func TestExplainJSONLDBadGraph(t *testing.T) {
	head := `{"@context":` + graph.ContextJSON + `,"@graph":[`
	for _, doc := range []string{
		`{"@context":{},"@graph":[{"@id":"not an iri"}]}`,
		head + `{"@id":"not an iri"}]}`,
		head + `{"@id":"urn:x:a"},{"@id":"urn:x:a"}]}`,
		head + `{"@id":"urn:x:a"}`,
	} {
		_, want := graph.ReadJSONLD(bytes.NewReader([]byte(doc)), "g.jsonld")
		if want == nil {
			t.Fatalf("%s: the reader takes it", doc)
		}
		_, err := why.ExplainJSONLD(bytes.NewReader([]byte(doc)), "g.jsonld", "e1", why.Options{})
		if err == nil || err.Error() != want.Error() || exitcode.Of(err) != exitcode.Of(want) {
			t.Errorf("%s: %v (exit %d), want %v (exit %d)", doc, err, exitcode.Of(err), want, exitcode.Of(want))
		}
	}
}

// synthDoc is the graph of a synthetic log (synthlog: events events, seed
// seed) and its JSON-LD document; the log itself is not kept.
func synthDoc(t *testing.T, events int, seed uint64) (*graph.Graph, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := synthlog.Generate(&b, events, seed, "synth"); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(graph.NewEventSource(bytes.NewReader(b.Bytes()), "events.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := g.JSONLD()
	if err != nil {
		t.Fatal(err)
	}
	return g, doc
}
