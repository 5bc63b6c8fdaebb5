package report

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// BenchmarkScanProjection is the page's part of the compact scan per
// drawn entity of a generated log of 20,000 events, summarised (no
// labels): "whole" copies the view's node (NodeView.Node), "thin" only
// what the projection reads (thinNode). page-ns/op is the time spent in
// that part alone (the stream's own work is left out), so it compares
// the two on a shared machine better than the whole stream's time.
func BenchmarkScanProjection(b *testing.B) {
	var log bytes.Buffer
	if err := synthlog.Generate(&log, 20000, 1, "bench-scan"); err != nil {
		b.Fatal(err)
	}
	rowOf := map[string]int{}
	for i := range 20000 {
		rowOf["e"+strconv.Itoa(i)] = i
	}
	rows := newRowSet(rowOf)
	pr := projection{
		rowOf:   func(_ int, ev string) (int, bool) { return rows.row(ev) },
		classes: map[[2]any]string{}, laneAt: func(_ int, _ string, row int) int { return row % 4 },
		rels: graph.CausalRelations(),
	}
	causal := causalPreds()
	for _, thin := range []bool{false, true} {
		name := "whole"
		if thin {
			name = "thin"
		}
		b.Run(name, func(b *testing.B) {
			var page time.Duration
			for b.Loop() {
				pc := &picture{ids: map[string]int32{}}
				_, err := graph.StreamViews(graph.NewEventSource(bytes.NewReader(log.Bytes()), "bench.jsonl"), graph.Options{}, graph.StreamOptions{}, func(v *graph.NodeView) error {
					t0 := time.Now()
					if graph.DrawKind(&graph.Node{Types: v.Types}) == "entity" {
						var n *graph.Node
						if thin {
							n = thinNode(v, causal)
						} else {
							n = v.Node()
						}
						if g, ok := projectNode(n, 0, pr, false); ok {
							pc.add(g, 0)
						}
					}
					page += time.Since(t0)
					return nil
				})
				if err != nil || pc.drawn == 0 {
					b.Fatalf("stream: %v, %d drawn", err, pc.drawn)
				}
			}
			b.ReportMetric(float64(page)/float64(b.N), "page-ns/op")
		})
	}
}
