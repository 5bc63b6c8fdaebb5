package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// reportBytes is every rendering of r, finished, with the error of the
// check that made it.
func reportBytes(t testing.TB, r *Report, err error) string {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "err: %v\n", err)
	if err != nil {
		return b.String()
	}
	r.Finish()
	for _, w := range []func(io.Writer) error{func(w io.Writer) error { return r.WriteText(w, true) }, r.WriteJSON, r.WriteSARIF, r.WriteJUnit} {
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprintf(&b, "ran: %v\n", r.ran)
	return b.String()
}

// oldGraphReport is CheckGraph as it was: the graph read whole (a reader
// that cannot seek takes that path).
func oldGraphReport(t testing.TB, plan Plan, doc []byte) string {
	r := &Report{}
	err := CheckGraph(r, plan, "g.jsonld", io.MultiReader(bytes.NewReader(doc)))
	return reportBytes(t, r, err)
}

// newGraphReport is CheckGraph on a reader that can seek (the scan) and
// whether the scan judged the document itself.
func newGraphReport(t testing.TB, plan Plan, doc []byte) (string, bool) {
	r := &Report{}
	scanned := true
	rd := bytes.NewReader(doc)
	err := checkGraphOrReread(r, plan, "g.jsonld", rd, func() (io.Reader, func(), error) {
		scanned = false
		_, err := rd.Seek(0, io.SeekStart)
		return rd, func() {}, err
	})
	// and CheckGraph itself takes that path
	r2 := &Report{}
	err2 := CheckGraph(r2, plan, "g.jsonld", bytes.NewReader(doc))
	a, b := reportBytes(t, r, err), reportBytes(t, r2, err2)
	if a != b {
		t.Fatalf("CheckGraph on a seeker differs from the scan:\n%s\n---\n%s", b, a)
	}
	// and so does the file path of Run (the file opened again if need be)
	t.Chdir(t.TempDir())
	p := "g.jsonld" // named as in the other reports
	if err := os.WriteFile(p, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openGraph(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r3 := &Report{}
	err3 := checkGraphFile(r3, plan, p, f)
	if c := reportBytes(t, r3, err3); c != a {
		t.Fatalf("the file path differs from the scan:\n%s\n---\n%s", a, c)
	}
	// the report without its digest: what the readings that leave the
	// digest out must give
	r6 := &Report{}
	err6 := CheckGraph(r6, plan, "g.jsonld", bytes.NewReader(doc))
	digested := r6.Evidence.GraphDigest != ""
	r6.Evidence.GraphDigest = ""
	noDigest := reportBytes(t, r6, err6)
	if digested && noDigest == a {
		t.Fatal("the digest is not in the report")
	}
	// and so does the filtered reading that drops nothing, but for the
	// digest, which a graph without nodes has not
	r4 := &Report{}
	err4 := CheckGraphWithout(r4, plan, "g.jsonld", bytes.NewReader(doc), func([]byte) bool { return false })
	if c := reportBytes(t, r4, err4); c != noDigest {
		t.Fatalf("CheckGraphWithout dropping nothing differs from the scan without its digest:\n%s\n---\n%s", noDigest, c)
	}
	// and so does a GraphScan fed by the caller's own scan, when that
	// scan reads the document (replay --seal), with and without digest
	for _, o := range []GraphScanOptions{{}, {NoDigest: true}} {
		want := a
		if o.NoDigest {
			want = noDigest
		}
		gs := NewGraphScan(plan, o)
		if graph.ScanJSONLDView(bytes.NewReader(doc), "g.jsonld", func(v *graph.NodeView) error {
			gs.Add(v)
			return nil
		}) != nil {
			gs.Discard()
			return a, scanned
		}
		r5 := &Report{}
		err5 := gs.Check(r5, plan, "g.jsonld", func() (io.Reader, func(), error) {
			return bytes.NewReader(doc), func() {}, nil
		})
		if c := reportBytes(t, r5, err5); c != want {
			t.Fatalf("GraphScan %+v differs from the scan:\n%s\n---\n%s", o, want, c)
		}
	}
	return a, scanned
}

func writeDoc(t testing.TB, g *graph.Graph) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := g.WriteJSONLD(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// graphCorpus returns graph documents: every event-log fixture and some
// synthetic and hand-built logs, with and without payloads.
func graphCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	logs := map[string][]byte{}
	files, _ := filepath.Glob("../testdata/*/*.jsonl")
	more, _ := filepath.Glob("../testdata/*/*/*/*/*.jsonl")
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[f] = data
	}
	if len(logs) < 10 {
		t.Fatalf("found %d fixture logs", len(logs))
	}
	for _, n := range []int{2, 40, 200} {
		var b bytes.Buffer
		if err := synthlog.Generate(&b, n, uint64(n), fmt.Sprintf("synth-%d", n)); err != nil {
			t.Fatal(err)
		}
		logs[fmt.Sprintf("synth-%d", n)] = b.Bytes()
	}
	plan := testPlan()
	sys := ev(eventlog.KindModelInput, "", "", "another prompt")
	sys.Role = "system"
	eff := ev(eventlog.KindExternalEffect, "read_file", "", nil)
	eff.Call = "e2"
	eff.Effect = &eventlog.Effect{Op: "delete", Target: "/data/report.txt"}
	logs["hand"] = buildLog(t, plan, logSpec{events: append(append([]*eventlog.Event{sys}, cleanEvents()[1:]...),
		ev(eventlog.KindToolCall, "delete_file", `"d1"`, map[string]any{"target": "/data/secret.txt"}),
		ev(eventlog.KindToolCall, "read_file", "42", map[string]any{"path": "/data/../etc/passwd"}),
		eff), signer: testKey})
	docs := map[string][]byte{}
	for name, data := range logs {
		for _, omit := range []bool{false, true} {
			g, err := graph.Build(eventlog.NewReader(bytes.NewReader(data), name), graph.Options{OmitPayloads: omit})
			if err != nil {
				continue
			}
			docs[fmt.Sprintf("%s omit=%v", name, omit)] = writeDoc(t, g)
		}
	}
	model, mcp := synthlog.InjectionRun(joinTS)
	run, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs["injection run"] = writeDoc(t, run.Graph)
	// ambiguous joins (issue 30 item 5): every candidate untrusted, and
	// candidates that differ in trust
	for name, mk := range map[string]func(string) ([]byte, []byte){"injection run twice": synthlog.InjectionRunTwice, "injection run mixed": synthlog.InjectionRunMixed} {
		model, mcp := mk(joinTS)
		run, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}, graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = writeDoc(t, run.Graph)
	}
	return docs
}

// edits returns tampered versions of a canonical document: a node removed
// (dangling references), an IRI changed, a seq made no integer, a node
// repeated, two nodes swapped, the document re-indented, cut, or with one
// byte changed.
func edits(t testing.TB, doc []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{"as written": doc}
	edit := func(name string, f func(g *graph.Graph) bool) {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), "g")
		if err != nil {
			t.Fatal(err)
		}
		if f(g) {
			out[name] = writeDoc(t, g)
		}
	}
	for _, i := range []int{0, 1, 5, 17} {
		edit(fmt.Sprintf("node %d removed", i), func(g *graph.Graph) bool {
			if i >= len(g.Nodes) {
				return false
			}
			g.Nodes = append(g.Nodes[:i:i], g.Nodes[i+1:]...)
			return true
		})
		edit(fmt.Sprintf("node %d renamed", i), func(g *graph.Graph) bool {
			if i >= len(g.Nodes) {
				return false
			}
			g.Nodes[i].ID += "x"
			return true
		})
	}
	edit("seq", func(g *graph.Graph) bool {
		for _, n := range g.Nodes {
			if n.Value(graph.WSeq) != "" && n.HasType(graph.WToolCall) {
				n.Props[graph.WSeq] = []graph.Term{graph.Lit("x1", graph.XSDInteger)}
				return true
			}
		}
		return false
	})
	edit("repeated", func(g *graph.Graph) bool {
		if len(g.Nodes) < 3 {
			return false
		}
		g.Nodes = append(g.Nodes, g.Nodes[1])
		return true
	})
	edit("repeated next", func(g *graph.Graph) bool {
		if len(g.Nodes) < 3 {
			return false
		}
		g.Nodes = append(g.Nodes[:2:2], g.Nodes[1:]...)
		return true
	})
	edit("swapped", func(g *graph.Graph) bool {
		if len(g.Nodes) < 3 {
			return false
		}
		g.Nodes[1], g.Nodes[2] = g.Nodes[2], g.Nodes[1]
		return true
	})
	var ind bytes.Buffer
	if err := json.Indent(&ind, doc, "", " "); err == nil {
		out["indented"] = ind.Bytes()
	}
	for _, k := range []int{1, 3, 7} {
		out[fmt.Sprintf("cut %d/8", k)] = doc[:len(doc)*k/8]
		b := bytes.Clone(doc)
		b[len(b)*k/8] ^= 0x04
		out[fmt.Sprintf("byte %d/8", k)] = b
	}
	return out
}

// The scan gives the report of the whole read, byte for byte, on every
// fixture graph and its tampered versions, for several plans; it judges
// every untampered single-log graph itself.
func TestGraphScanEqualsWhole(t *testing.T) {
	plans := map[string]Plan{"test": testPlan(), "none": {}, "untrusted-empty": {Tools: testPlan().Tools, Untrusted: []string{}},
		"untrusted": {Tools: joinPlan.Tools, Untrusted: []string{"tool:read_text_file"}}}
	docs := graphCorpus(t)
	scannedDocs, compared := 0, 0
	for name, doc := range docs {
		eds := map[string][]byte{"as written": doc}
		// every edit on a few documents; the others as written
		if strings.Contains(name, "synth-40 ") || strings.Contains(name, "hand") || strings.Contains(name, "injection") || strings.Contains(name, "hansard") {
			eds = edits(t, doc)
		}
		for ename, d := range eds {
			for pname, plan := range plans {
				if ename != "as written" && pname != "test" && pname != "untrusted" {
					continue
				}
				want := oldGraphReport(t, plan, d)
				got, scanned := newGraphReport(t, plan, d)
				compared++
				if got != want {
					t.Errorf("%s, %s, plan %s: scan differs from whole read:\n%s\n---\n%s", name, ename, pname, want, got)
					continue
				}
				if ename == "as written" && pname != "untrusted" && !strings.HasPrefix(name, "injection run") {
					if !scanned {
						t.Errorf("%s, plan %s: read again", name, pname)
					}
					scannedDocs++
				}
			}
		}
	}
	if scannedDocs < 90 {
		t.Errorf("only %d documents judged by the scan (of %d comparisons)", scannedDocs, compared)
	}
	t.Logf("%d comparisons, %d judged by the scan alone", compared, scannedDocs)
}

// The graph digest computed node by node is WriteNQuads' digest.
func TestNQuadsDigestScan(t *testing.T) {
	for name, doc := range graphCorpus(t) {
		g, err := graph.ReadJSONLD(bytes.NewReader(doc), name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := g.WriteNQuads(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		d := graph.NewNQuadsDigest()
		for _, n := range g.Nodes {
			if err := d.Add(n); err != nil {
				t.Fatal(err)
			}
		}
		got, err := d.Sum()
		if err != nil || got != want {
			t.Errorf("%s: digest %s (%v), want %s", name, got, err, want)
		}
		// and from the views of a scan
		d = graph.NewNQuadsDigest()
		if err := graph.ScanJSONLDView(bytes.NewReader(doc), name, d.AddView); err != nil {
			t.Fatal(err)
		}
		got, err = d.Sum()
		if err != nil || got != want {
			t.Errorf("%s: digest of the views %s (%v), want %s", name, got, err, want)
		}
	}
}

// The scan holds a fraction of what the graph read whole holds.
func TestGraphScanMemory(t *testing.T) {
	var b bytes.Buffer
	if err := synthlog.Generate(&b, 10000, 1, "mem"); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(eventlog.NewReader(bytes.NewReader(b.Bytes()), "mem"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// read from a file, as verify does: a reader over bytes in memory may
	// share them
	p := filepath.Join(t.TempDir(), "g.jsonld")
	if err := os.WriteFile(p, writeDoc(t, g), 0o644); err != nil {
		t.Fatal(err)
	}
	g = nil
	read := func(f func(io.Reader) any) func() any {
		return func() any {
			fd, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			return f(fd)
		}
	}
	scan := memtest.Held(read(func(rd io.Reader) any {
		s := newGraphScan(true)
		if err := graph.ScanJSONLDView(rd, "g", s.add); err != nil {
			t.Fatal(err)
		}
		// as checkGraphStream: the digest is summed (its batches dropped)
		if _, err := s.digest.Sum(); err != nil {
			t.Fatal(err)
		}
		return s
	}))
	whole := memtest.Held(read(func(rd io.Reader) any {
		g, err := graph.ReadJSONLD(rd, "g")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}))
	t.Logf("10000 events; heap held: graph %d KiB, scan %d KiB", whole>>10, scan>>10)
	if whole == 0 || scan > whole/4 {
		t.Errorf("scan holds %d KiB, more than a quarter of the graph's %d KiB", scan>>10, whole>>10)
	}
}

// FuzzGraphScan: on any document, the scan's report (and the file path's)
// is the whole read's, byte for byte.
func FuzzGraphScan(f *testing.F) {
	plan := testPlan()
	data := buildLog(f, plan, logSpec{events: append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", `"d1"`, map[string]any{"target": "/data/x"})), signer: testKey})
	g, err := graph.Build(eventlog.NewReader(bytes.NewReader(data), "events.jsonl"), graph.Options{})
	if err != nil {
		f.Fatal(err)
	}
	doc := writeDoc(f, g)
	f.Add(doc)
	f.Add(doc[:len(doc)/2])
	f.Add(bytes.Replace(doc, []byte(`/e2"`), []byte(`/e2x"`), 1))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		want := oldGraphReport(t, plan, doc)
		got, _ := newGraphReport(t, plan, doc)
		if got != want {
			t.Fatalf("scan differs from whole read:\n%s\n---\n%s", want, got)
		}
	})
}

// scanOutcome scans doc with references swept every batch of them:
// "ok", "reread" or the scan's error.
func scanOutcome(doc []byte, batch int) string {
	s := newGraphScan(true)
	s.refs.batch = batch
	err := graph.ScanJSONLDView(bytes.NewReader(doc), "g", s.add)
	if err == nil {
		err = s.finish()
	}
	s.digest.Close()
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errGraphReread):
		return "reread"
	}
	return err.Error()
}

// danglingOracle says whether a graph holds a reference (other than to
// its own node) to an IRI no node has, from a set of all IRIs.
func danglingOracle(g *graph.Graph) bool {
	ids := map[string]bool{}
	for _, n := range g.Nodes {
		ids[n.ID] = true
	}
	for _, n := range g.Nodes {
		for _, vals := range n.Props {
			for _, v := range vals {
				if v.IRI != "" && v.IRI != n.ID && !ids[v.IRI] {
					return true
				}
			}
		}
	}
	return false
}

// The references are checked exactly whatever the sweeps: every batch
// size gives the same outcome, and a graph read whole is judged by the
// scan only when no reference dangles.
func TestGraphScanRefBatches(t *testing.T) {
	docs := graphCorpus(t)
	checked, danglingDocs := 0, 0
	for name, doc := range docs {
		for ename, d := range edits(t, doc) {
			want := scanOutcome(d, refBatch)
			for _, b := range []int{1, 2, 5, 64} {
				if got := scanOutcome(d, b); got != want {
					t.Errorf("%s, %s: batch %d: %s, want %s", name, ename, b, got, want)
				}
			}
			g, err := graph.ReadJSONLD(bytes.NewReader(d), "g")
			if err != nil {
				continue
			}
			// (a reread has other causes too: nodes out of order, joins)
			if dangling := danglingOracle(g); dangling && want != "reread" {
				t.Errorf("%s, %s: scan %s of a graph with a dangling reference", name, ename, want)
			} else if dangling {
				danglingDocs++
			}
			checked++
		}
	}
	t.Logf("%d documents checked against the oracle, %d with a dangling reference", checked, danglingDocs)
	if danglingDocs < 20 {
		t.Errorf("only %d documents with a dangling reference", danglingDocs)
	}
}

// refCheck on random IRIs, random references (pending, settled, passed,
// after the last node) and random sweeps: dangling exactly when a set of
// the IRIs says so.
func TestRefCheckRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	for round := range 400 {
		var all []string
		for range 1 + rng.IntN(60) {
			all = append(all, fmt.Sprintf("urn:r:%d", rng.IntN(200)))
		}
		slices.Sort(all)
		all = slices.Compact(all)
		ids := map[string]bool{}
		for _, id := range all {
			ids[id] = true
		}
		s := newGraphScan(true)
		s.digest.Close()
		s.refs.batch = 1 + rng.IntN(8)
		dangling := false
		var err error
		for _, id := range all {
			if err = s.refs.reach([]byte(id)); err != nil {
				break
			}
			s.addID([]byte(id))
			for range rng.IntN(4) {
				ref := all[rng.IntN(len(all))]
				if rng.IntN(25) == 0 {
					ref = fmt.Sprintf("urn:r:%d", rng.IntN(200)) // perhaps no node's
				}
				if ref == id {
					continue
				}
				dangling = dangling || !ids[ref]
				s.refs.add([]byte(ref))
			}
			if s.refs.full() {
				if err = s.refs.sweep(s); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = s.finish()
		}
		if got := errors.Is(err, errGraphReread); got != dangling || (err != nil && !got) {
			t.Fatalf("round %d: %v, dangling %v", round, err, dangling)
		}
	}
}
