package graph

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/memtest"
)

// dotClassSets are --classes maps for the comparisons: event ids, node
// IRIs, ids that name nothing, and more than the 50 findings a summary
// shows.
func dotClassSets(g *Graph) []map[string]string {
	many := map[string]string{}
	for i := 1; i < 400; i += 3 {
		many[fmt.Sprintf("e%d", i)] = []string{"violation", "notice", "tampered", "removed", "odd"}[i%5]
	}
	iris := map[string]string{"e404404": "notice", "urn:nothing:x": "tampered"}
	for i, n := range g.Nodes {
		if i%7 == 0 {
			iris[n.ID] = "highlight"
		}
	}
	// an event id and the IRI of its node: the IRI's class wins
	both := map[string]string{"e5": "violation", "e7": "notice"}
	for _, n := range g.Nodes {
		if NodeEvent(n) == "e5" || NodeEvent(n) == "e7" {
			both[n.ID] = "highlight"
		}
	}
	return []map[string]string{nil, {"e5": "violation", "e12": "notice"}, iris, many, both}
}

// TestStreamDOTEqualsWriteDOT: the streamed picture has the bytes of the
// in-memory graph's WriteDOT and of the summary as it was drawn before
// (legacyWriteDOT), drawn in full and summarised, with classes, for the
// fixtures and synthetic logs of several sizes, whatever the run size;
// its digest and quad count are the N-Quads'.
func TestStreamDOTEqualsWriteDOT(t *testing.T) {
	logs := []struct {
		name string
		log  []byte
	}{{"sample", sampleLog(t)}, {"hansard", hansardLog(t)}, {"surface", surfaceLog(t)}, {"empty", nil},
		{"synthetic-300", synthetic(t, 300, 7)}, {"synthetic-1500", synthetic(t, 1500, 8)}, {"synthetic-4000", synthetic(t, 4000, 9)}}
	summaries := 0
	for _, l := range logs {
		sealed := Options{Seal: &eventlog.SealRef{Digest: strings.Repeat("ab", 32), WitnessID: "w-1"}}
		for _, opts := range []Options{{}, {OmitPayloads: true}, sealed} {
			if opts.Seal != nil && len(l.log) > 1<<20 {
				continue
			}
			g := buildBytes(t, l.log, opts)
			var nq bytes.Buffer
			wd, err := g.WriteNQuads(&nq)
			if err != nil {
				t.Fatal(err)
			}
			for ci, classes := range dotClassSets(g) {
				maxes := []int{0, 3, 40, 1000, 1 << 30}
				if len(l.log) > 1<<20 {
					// the long logs: summaries, and one full drawing
					if maxes = []int{0, 40}; ci == 0 {
						maxes = append(maxes, 1<<30)
					}
				}
				for _, max := range maxes {
					do := DOTOptions{Classes: classes, MaxNodes: max, Title: l.name}
					var want, legacy bytes.Buffer
					if err := g.WriteDOT(&want, do); err != nil {
						t.Fatal(err)
					}
					if err := g.legacyWriteDOT(&legacy, do); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(want.Bytes(), legacy.Bytes()) {
						t.Fatalf("%s classes%d max %d: WriteDOT differs from the legacy summary:\n%s", l.name, ci, max, firstDiff(want.Bytes(), legacy.Bytes()))
					}
					if strings.Contains(want.String(), "summary [shape=note") {
						summaries++
					}
					rbs := []int{defaultRunBytes}
					if ci == 1 && max == 40 && !opts.OmitPayloads {
						rbs = append(rbs, 64<<10)
						if len(l.log) < 64<<10 {
							rbs = append(rbs, 1)
						}
					}
					for _, rb := range rbs {
						var got bytes.Buffer
						st, err := streamDOT(NewEventSource(bytes.NewReader(l.log), l.name), &got, opts, do, StreamOptions{RunBytes: rb, TempDir: t.TempDir()})
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got.Bytes(), want.Bytes()) {
							t.Fatalf("%s omit=%v classes%d max %d run %d: stream differs from WriteDOT:\n%s", l.name, opts.OmitPayloads, ci, max, rb, firstDiff(got.Bytes(), want.Bytes()))
						}
						if st.Digest != wd || st.Bytes != int64(want.Len()) || st.Quads != int64(bytes.Count(nq.Bytes(), []byte("\n"))) {
							t.Fatalf("%s: stats %+v, want digest %s, %d quads, %d bytes", l.name, st, wd, bytes.Count(nq.Bytes(), []byte("\n")), want.Len())
						}
					}
				}
			}
		}
	}
	if summaries < 20 {
		t.Fatalf("only %d of the pictures compared are summaries", summaries)
	}
}

func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("at byte %d: got %q, want %q", i, got[max(0, i-120):min(len(got), i+120)], want[max(0, i-120):min(len(want), i+120)])
}

// TestStreamDOTBoundedMemory: a summary of a long log holds the external
// sort's runs while it reads the log, and then a few dozen bytes per node
// and edge, far from the graph in memory: the live heap when the picture
// is written grows with the events by much less than the graph does, and
// the heap in use while the log is read stays within the runs' budget.
func TestStreamDOTBoundedMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	const rb = 1 << 20
	type heap struct{ live, peak, graph, runs int64 }
	measure := func(events int) heap {
		log := synthetic(t, events, 3)
		live0 := memtest.Live()
		inUse0 := memtest.InUse()
		src := &sampledSource{src: NewEventSource(bytes.NewReader(log), "s")}
		lw := &liveWriter{}
		st, err := streamDOT(src, lw, Options{}, DOTOptions{Classes: map[string]string{"e5": "violation"}}, StreamOptions{RunBytes: rb, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if st.Runs < 2 || lw.live == 0 {
			t.Fatalf("%d events: expected spilled runs and a picture, got %d runs", events, st.Runs)
		}
		h := heap{live: int64(lw.live) - int64(live0), peak: int64(max(src.heap.Peak, lw.live)) - int64(inUse0), runs: int64(st.Runs)}
		runtime.GC()
		inUse0 = memtest.InUse()
		g := buildBytes(t, log, Options{})
		h.graph = int64(memtest.InUse()) - int64(inUse0)
		runtime.KeepAlive(g)
		t.Logf("%d events, %d runs: live heap %d KiB when the picture is written, heap in use at most %d KiB while reading; the graph in memory %d KiB",
			events, st.Runs, h.live>>10, h.peak>>10, h.graph>>10)
		return h
	}
	h1 := measure(4000)
	h2 := measure(16000)
	perEvent, graphPerEvent := (h2.live-h1.live)/12000, (h2.graph-h1.graph)/12000
	t.Logf("live heap grows by %d bytes per event; the graph by %d", perEvent, graphPerEvent)
	if perEvent > 256 || perEvent*8 > graphPerEvent {
		t.Fatalf("live heap grows by %d bytes per event; the graph by %d", perEvent, graphPerEvent)
	}
	// the budget of TestStreamJSONLDBoundedMemory: three runs (filling,
	// sorting, spilling), a 1 MiB reader and its index per spilled run,
	// the writer buffers; then a few hundred bytes a node
	if budget := int64(3*(rb+chunkSize)) + h2.runs*(1<<20+1<<18) + 8<<20 + 16000*256; h2.peak > budget {
		t.Fatalf("heap in use %d KiB while reading 16000 events, over %d KiB", h2.peak>>10, budget>>10)
	}
}

// sampledSource samples the heap in use every 256 events it gives.
type sampledSource struct {
	src  EventSource
	n    int
	heap memtest.Sampler
}

func (s *sampledSource) Next() (*eventlog.Event, error) {
	s.n++
	if s.n%256 == 0 {
		s.heap.Sample()
	}
	return s.src.Next()
}

// liveWriter discards what it is given; at the first write it measures the
// live heap (after a collection).
type liveWriter struct{ live uint64 }

func (l *liveWriter) Write(b []byte) (int, error) {
	if l.live == 0 {
		l.live = memtest.Live()
	}
	return len(b), nil
}

// FuzzParseBlock: a block of any bytes is read or refused, never a panic;
// a block of a real graph reads back to its node.
func FuzzParseBlock(f *testing.F) {
	g := buildBytes(f, sampleLog(f), Options{})
	for _, n := range g.Nodes[:min(len(g.Nodes), 12)] {
		f.Add(nodeBlock(n))
	}
	f.Add(appendLine(appendLine([]byte("<u:a>"), "u:p", Lit("x\u00e9\"", "u:dt")), "u:q", Ref("u:b")))
	f.Add([]byte("<u:a>"))
	f.Add(appendLine([]byte("<>"), "u:p", Str("")))
	f.Fuzz(func(t *testing.T, blk []byte) {
		n, err := parseBlock(blk)
		d := newDotStream(DOTOptions{Classes: map[string]string{"e1": "violation", "u:a": "notice"}, MaxNodes: 1})
		derr := d.block(blk)
		if err != nil {
			return
		}
		if derr != nil {
			t.Fatalf("parseBlock reads %q, the stream refuses it: %v", blk, derr)
		}
		if back := nodeBlock(n); !bytes.Equal(back, blk) {
			if n2, err := parseBlock(back); err != nil || !bytes.Equal(nodeBlock(n2), back) {
				t.Fatalf("node of %q does not read back: %q, %v", blk, back, err)
			}
		}
	})
}

// nodeBlock is the merged block of n: its "<subject>" key, then its
// sorted, distinct compact lines (streamline.go).
func nodeBlock(n *Node) []byte {
	var lines []string
	for _, t := range n.Types {
		lines = append(lines, string(appendLine(nil, RDFType, Ref(t))))
	}
	for p, vals := range n.Props {
		for _, v := range vals {
			lines = append(lines, string(appendLine(nil, p, v)))
		}
	}
	b := []byte("<" + n.ID + ">")
	sortStrings(lines)
	prev := ""
	for _, l := range lines {
		if l == prev {
			continue
		}
		prev = l
		b = append(b, l...)
	}
	return b
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// BenchmarkStreamDOT100k: the streamed summary of a 100k-event log.
func BenchmarkStreamDOT100k(b *testing.B) {
	log := synthetic(b, 100000, 1)
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := streamDOT(NewEventSource(bytes.NewReader(log), "bench"), io.Discard, Options{}, DOTOptions{}, StreamOptions{TempDir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestIRIList: IRIs kept after a shared prefix (taken from the first
// IRI), or whole when they do not have it, are found in IRI order, and
// absent ones are not, whichever IRI comes first.
func TestIRIList(t *testing.T) {
	ids := []string{"urn:witness:s/a", "urn:witness:s/args/e1", "urn:witness:s/args/e10", "urn:witness:s/args/e2",
		"urn:witness:s;x", "urn:witness:s/call/e1", "urn:witness:r/call/e1", "urn:witness:s", "urn:witness:s0/a", "urn:witness:s/", "urn:z", "a:b", "urn:witness:s/\x7f"}
	sortStrings(ids)
	prefixes := map[string]bool{}
	for k := range ids {
		in := ids[k:]
		var l iriList
		for _, id := range in {
			l.add([]byte(id))
		}
		prefixes[string(l.prefix)] = true
		for i, id := range in {
			if got := l.find([]byte(id)); got != int32(i) {
				t.Errorf("prefix %q: find %q = %d, want %d", l.prefix, id, got, i)
			}
			if got := string(l.iri(nil, i)); got != id {
				t.Errorf("prefix %q: iri %d = %q, want %q", l.prefix, i, got, id)
			}
		}
		for _, id := range append([]string{"urn:witness:s/args/e3", "urn:witness:s/b", "urn:witness:", "urn:witness:s/call", "zz:z", "A:b"}, ids[:k]...) {
			if got := l.find([]byte(id)); got != -1 {
				t.Errorf("prefix %q: find absent %q = %d", l.prefix, id, got)
			}
		}
	}
	if !prefixes["urn:witness:s/"] || !prefixes["urn:witness:r/"] {
		t.Fatalf("prefixes tried: %v", prefixes)
	}
}

// BenchmarkStreamDOTFile: the streamed summary of the log named by
// $WITNESS_BENCH_EVENTS (skipped without it), for profiles at scale.
func BenchmarkStreamDOTFile(b *testing.B) {
	name := os.Getenv("WITNESS_BENCH_EVENTS")
	if name == "" {
		b.Skip("set WITNESS_BENCH_EVENTS to an event log")
	}
	for i := 0; i < b.N; i++ {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		st, err := streamDOT(NewEventSource(f, name), io.Discard, Options{}, DOTOptions{}, StreamOptions{TempDir: b.TempDir()})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Events), "events")
	}
}
