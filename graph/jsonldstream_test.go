package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/agent-trace-witness/witness/internal/memtest"
)

// TestStreamJSONLDEqualsInMemory: the streamed JSON-LD has the bytes of
// the in-memory graph's WriteJSONLD, and its digest and quad count are the
// N-Quads', whatever the run size (many spilled runs here).
func TestStreamJSONLDEqualsInMemory(t *testing.T) {
	logs := map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "surface": surfaceLog(t), "synthetic-3000": synthetic(t, 3000, 5), "empty": nil}
	for name, log := range logs {
		for _, opts := range []Options{{}, {OmitPayloads: true}} {
			g := buildBytes(t, log, opts)
			var want, nq bytes.Buffer
			if err := g.WriteJSONLD(&want); err != nil {
				t.Fatal(err)
			}
			wd, err := g.WriteNQuads(&nq)
			if err != nil {
				t.Fatal(err)
			}
			for _, rb := range []int{1, 4 << 10, 256 << 10, defaultRunBytes} {
				t.Run(fmt.Sprintf("%s/omit=%v/run%d", name, opts.OmitPayloads, rb), func(t *testing.T) {
					var got bytes.Buffer
					st, err := StreamJSONLD(NewEventSource(bytes.NewReader(log), name), &got, opts, StreamOptions{RunBytes: rb, TempDir: t.TempDir()})
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got.Bytes(), want.Bytes()) {
						i := 0
						for i < got.Len() && i < want.Len() && got.Bytes()[i] == want.Bytes()[i] {
							i++
						}
						t.Fatalf("stream differs from in-memory at byte %d (%d runs): got %q, want %q", i, st.Runs,
							got.Bytes()[max(0, i-80):min(got.Len(), i+80)], want.Bytes()[max(0, i-80):min(want.Len(), i+80)])
					}
					if st.Digest != wd || st.Bytes != int64(want.Len()) || st.Quads != int64(bytes.Count(nq.Bytes(), []byte("\n"))) {
						t.Fatalf("stats %+v, want digest %s, %d quads", st, wd, bytes.Count(nq.Bytes(), []byte("\n")))
					}
				})
			}
		}
	}
}

// TestNQReorder: blocks in IRI order come out in "<subject>" order, with
// prefixes followed by bytes on both sides of '>'.
func TestNQReorder(t *testing.T) {
	ids := []string{"u:a", "u:a!", "u:a!x", "u:a-1", "u:a-10", "u:a-2", "u:a?", "u:ab", "u:b", "u:b1", "u:c"}
	var out bytes.Buffer
	aw := newAsyncWriter(1<<10, &out)
	r := &nqReorder{w: aw}
	for _, id := range ids {
		if _, _, err := r.push(nil, appendLine([]byte("<"+id+">"), "u:p", Str("v"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.finish(); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	var want []byte
	order := append([]string(nil), ids...)
	sortKeys(order)
	for _, id := range order {
		want = append(want, "<"+id+"> <u:p> \"v\" .\n"...)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("got\n%s\nwant\n%s", out.Bytes(), want)
	}
}

func sortKeys(ids []string) {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if compareKey(ids[j], ids[i]) < 0 {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
}

// TestStreamJSONLDDeterministic: ten runs, the same bytes.
func TestStreamJSONLDDeterministic(t *testing.T) {
	log := synthetic(t, 2000, 7)
	var first []byte
	for i := 0; i < 10; i++ {
		var b bytes.Buffer
		if _, err := StreamJSONLD(NewEventSource(bytes.NewReader(log), "s"), &b, Options{}, StreamOptions{RunBytes: 64 << 10, TempDir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
		} else if !bytes.Equal(b.Bytes(), first) {
			t.Fatalf("run %d differs", i)
		}
	}
}

// TestStreamJSONLDBoundedMemory: the heap in use while streaming does not
// hold the graph: its growth stays within the streamer's budget (three
// runs of RunBytes in 4 MiB chunks: one filling, one sorting, one
// spilling; a 1 MiB reader and its block index per spilled run, two 1 MiB
// writer buffers each side), with generous slack, and under the live heap
// of the graph built in memory. The log is large enough (48,000 events,
// 16 runs) that the fixed part of the budget does not hide the part that
// grows.
func TestStreamJSONLDBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	log := synthetic(t, 48000, 3)
	// little garbage, so that the heap in use is about the live heap
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	base := memtest.InUse()
	const rb = 1 << 20
	pw := &peakWriter{}
	st, err := StreamJSONLD(NewEventSource(bytes.NewReader(log), "s"), pw, Options{}, StreamOptions{RunBytes: rb, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	grew := int64(pw.heap.Peak) - int64(base)
	budget := int64(3*(rb+chunkSize) + st.Runs*(1<<20+1<<18) + 6<<20)
	runtime.GC()
	base = memtest.InUse()
	g := buildBytes(t, log, Options{})
	runtime.GC()
	inMemory := int64(memtest.InUse()) - int64(base)
	runtime.KeepAlive(g)
	t.Logf("%d events, %d runs, %d JSON-LD bytes: heap growth %d KiB streamed (budget %d KiB), %d KiB for the graph in memory",
		st.Events, st.Runs, st.Bytes, grew>>10, budget>>10, inMemory>>10)
	if st.Runs < 4 {
		t.Fatalf("expected spilled runs, got %d", st.Runs)
	}
	if grew > budget+budget/2 {
		t.Fatalf("heap grew %d KiB while streaming, over the budget of %d KiB", grew>>10, budget>>10)
	}
	if grew >= inMemory {
		t.Fatalf("heap grew %d KiB while streaming, not under the %d KiB the graph takes in memory", grew>>10, inMemory>>10)
	}
}

// peakWriter discards what it is given and samples the heap in use every
// 4 writes (StreamJSONLD writes 1 MiB at a time).
type peakWriter struct {
	n    int
	heap memtest.Sampler
}

func (p *peakWriter) Write(b []byte) (int, error) {
	p.n++
	if p.n%4 == 1 {
		p.heap.Sample()
	}
	return len(b), nil
}

var _ io.Writer = (*peakWriter)(nil)

// TestStreamJSONLDWritesNothingOnError: a log that does not map leaves the
// output empty (the CLI writes nothing to stdout on failure).
func TestStreamJSONLDWritesNothingOnError(t *testing.T) {
	log := synthetic(t, 300, 4)
	lines := bytes.Split(log, []byte("\n"))
	lines[250] = bytes.Replace(lines[250], []byte(`"ts":"2026-`), []byte(`"ts":"x2026-`), 1)
	var out bytes.Buffer
	_, err := StreamJSONLD(NewEventSource(bytes.NewReader(bytes.Join(lines, []byte("\n"))), "bad.jsonl"), &out, Options{}, StreamOptions{RunBytes: 4 << 10, TempDir: t.TempDir()})
	if err == nil || out.Len() != 0 {
		t.Fatalf("error %v, %d bytes written", err, out.Len())
	}
}

// checkLiteral: the direct N-Quads to JSON transcoding of a literal body
// equals unescaping it and writing the JSON string, error for error.
func checkLiteral(t *testing.T, body []byte) {
	t.Helper()
	var j jsonldNode
	got, gerr := j.appendLiteral([]byte("x"), body)
	lex, err := unescapeNQuads(nil, body)
	var want []byte
	if err == nil {
		want, err = appendJSONString([]byte("x"), string(lex))
	}
	if (err == nil) != (gerr == nil) || (err == nil && !bytes.Equal(got, want)) {
		t.Fatalf("body %q: got %q, %v; want %q, %v", body, got, gerr, want, err)
	}
}

func TestAppendLiteral(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"uote", "tab\tnl\nbs\\ del\x7f nul\x00 \x1f é 日本語 🙂", "{\"a\":\"b\\\\c\"}", "\u2028"} {
		checkLiteral(t, AppendEscaped(nil, s))
	}
	for _, s := range []string{`\u0008`, `\u007f`, `\U0001F642`, `\x`, `\`, "\"", "\xff", "a\xffb", `\u00`, `\u001G`, "é\\u001F"} {
		checkLiteral(t, []byte(s))
	}
}

func FuzzAppendLiteral(f *testing.F) {
	f.Add([]byte(`tab\tq\"u\u001F\u007F é`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkLiteral(t, body)
		checkLiteral(t, AppendEscaped(nil, string(body)))
	})
}

// TestStreamViewsEqualsScan: StreamViews hands fn the views
// ScanJSONLDView reads from StreamJSONLD's document, node for node, with
// the same digest and quad count, whatever the run size.
func TestStreamViewsEqualsScan(t *testing.T) {
	logs := map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "surface": surfaceLog(t), "synthetic-3000": synthetic(t, 3000, 5), "empty": nil}
	dump := func(b *bytes.Buffer, v *NodeView) {
		fmt.Fprintf(b, "node %q types %q\n", v.ID, v.Types)
		for _, p := range v.Props {
			fmt.Fprintf(b, " %q:", p.Pred)
			for _, x := range p.Vals {
				if len(x.IRI) > 0 {
					fmt.Fprintf(b, " <%q>", x.IRI)
				} else {
					fmt.Fprintf(b, " %q^^%q", x.Lex, x.Datatype)
				}
			}
			b.WriteByte('\n')
		}
	}
	nodes := 0
	for name, log := range logs {
		for _, opts := range []Options{{}, {OmitPayloads: true}} {
			var doc bytes.Buffer
			want, err := StreamJSONLD(NewEventSource(bytes.NewReader(log), name), &doc, opts, StreamOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var scanned bytes.Buffer
			if err := ScanJSONLDView(bytes.NewReader(doc.Bytes()), name, func(v *NodeView) error {
				dump(&scanned, v)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, rb := range []int{1, 256 << 10} {
				var got bytes.Buffer
				st, err := StreamViews(NewEventSource(bytes.NewReader(log), name), opts, StreamOptions{RunBytes: rb, TempDir: t.TempDir()}, func(v *NodeView) error {
					nodes++
					dump(&got, v)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != scanned.String() {
					a, b := got.Bytes(), scanned.Bytes()
					i := 0
					for i < len(a) && i < len(b) && a[i] == b[i] {
						i++
					}
					t.Fatalf("%s/omit=%v/run%d: views differ at byte %d:\n got  %s\n scan %s", name, opts.OmitPayloads, rb, i, a[max(0, i-200):min(len(a), i+200)], b[max(0, i-200):min(len(b), i+200)])
				}
				if st.Digest != want.Digest || st.Quads != want.Quads {
					t.Fatalf("%s: stats %+v, want %+v", name, st, want)
				}
			}
		}
	}
	if nodes == 0 {
		t.Fatal("no node seen")
	}
	// an error from fn stops the stream and is returned
	stop := errors.New("stop")
	calls := 0
	if _, err := StreamViews(NewEventSource(bytes.NewReader(sampleLog(t)), "s"), Options{}, StreamOptions{TempDir: t.TempDir()}, func(*NodeView) error {
		calls++
		return stop
	}); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: got %v after %d calls", err, calls)
	}
}
