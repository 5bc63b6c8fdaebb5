package graph

import (
	"bufio"
	"os"
	"testing"
)

// BenchmarkScanJSONLDViewFile: ScanJSONLDView over the graph document
// named by $WITNESS_BENCH_GRAPH (skipped without it), the reading that
// verify --graph, replay --graph and why --graph share, for profiles at
// scale.
func BenchmarkScanJSONLDViewFile(b *testing.B) {
	name := benchGraphFile(b)
	for i := 0; i < b.N; i++ {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		nodes := 0
		err = ScanJSONLDView(f, name, func(*NodeView) error { nodes++; return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(nodes), "nodes")
	}
}

// BenchmarkScanElementsFile: the element cutter alone (with its nesting
// check) over $WITNESS_BENCH_GRAPH.
func BenchmarkScanElementsFile(b *testing.B) {
	name := benchGraphFile(b)
	for i := 0; i < b.N; i++ {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		err = scanElements(bufio.NewReaderSize(f, 1<<20), func(*graphReader, int) error { return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchGraphFile returns the graph document named by $WITNESS_BENCH_GRAPH,
// with its size set as the bytes per operation, or skips the benchmark.
func benchGraphFile(b *testing.B) string {
	name := os.Getenv("WITNESS_BENCH_GRAPH")
	if name == "" {
		b.Skip("set WITNESS_BENCH_GRAPH to a graph document")
	}
	st, err := os.Stat(name)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	return name
}
