package replay

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// benchSizes are the graph sizes of the replay benchmarks. Set
// WITNESS_BENCH_MAX_NODES to skip the larger ones while iterating.
var benchSizes = []int{10_000, 100_000, 1_000_000}

type benchGraphs struct {
	mu sync.Mutex
	g  map[int]*graph.Graph
}

func (b *benchGraphs) get(tb testing.TB, n int) *graph.Graph {
	b.mu.Lock()
	defer b.mu.Unlock()
	if g := b.g[n]; g != nil {
		return g
	}
	// keep one graph at a time: the 1M-node graph is large
	b.g = map[int]*graph.Graph{}
	runtime.GC()
	g, err := graph.Build(synthlog.NewGraph(n), graph.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	b.g[n] = g
	return g
}

func benchSizeAllowed(n int) bool {
	var max int
	if s := os.Getenv("WITNESS_BENCH_MAX_NODES"); s != "" {
		fmt.Sscan(s, &max)
	}
	return max == 0 || n <= max
}

// BenchmarkReplay measures, per graph size, indexing the graph, one
// removal (the definition of the busiest tool: a large compensation set)
// and a full ranking. The graph itself is generated outside the timer.
func BenchmarkReplay(b *testing.B) {
	var cache benchGraphs
	tool := graph.ToolIRI(graph.SessionIRI(synthlog.GraphSession), synthlog.BusiestTool)
	for _, n := range benchSizes {
		if !benchSizeAllowed(n) {
			continue
		}
		name := fmt.Sprintf("nodes=%d", n)
		b.Run("index/"+name, func(b *testing.B) {
			g := cache.get(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := NewEngine(g); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("remove/"+name, func(b *testing.B) {
			e, err := NewEngine(cache.get(b, n))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.Counterfactual(Options{Remove: []string{tool}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("rank/"+name, func(b *testing.B) {
			e, err := NewEngine(cache.get(b, n))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := e.Rank(10)
				b.ReportMetric(float64(r.Total), "actions")
			}
		})
	}
}
