package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/replay"
)

// graphPeaks returns the peak heap of the in-memory graph part (the
// graph and replay's engine over it) and of the compact one
// (compactGraph: the stream, replay's index, the picture's projection and
// the chains' subgraph) on a synthetic log of n events, the first rows
// of them on the timeline.
func graphPeaks(t *testing.T, n, rows int) (mem, cmp uint64) {
	var b bytes.Buffer
	if err := synthlog.Generate(&b, n, 7, "memory"); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b = bytes.Buffer{}
	ls := &logState{file: p, rowOf: map[string]int{}}
	for i := 0; i < rows; i++ {
		ls.rowOf[fmt.Sprintf("e%d", i)] = i
	}
	o := Options{Stream: graph.StreamOptions{RunBytes: 8 << 20, TempDir: t.TempDir()}}
	o.defaults()
	var run *runState
	mem = memtest.Peak(func() {
		g, err := buildGraph(p, graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := replay.NewEngine(g)
		if err != nil {
			t.Fatal(err)
		}
		run = &runState{g: g, eng: eng}
	})
	run = nil
	cmp = memtest.Peak(func() {
		var notes []string
		run, notes, _ = startCompact(p, nil, o).finish([]*logState{ls}, map[string]bool{"e5": true}, func(int, string, int) int { return 0 })
		if run == nil || run.eng == nil {
			t.Fatalf("no compact graph: %v", notes)
		}
	})
	if run.pic.drawn == 0 || len(run.g.Nodes) == 0 {
		t.Fatalf("the scan kept nothing: %d drawn, %d subgraph nodes", run.pic.drawn, len(run.g.Nodes))
	}
	return mem, cmp
}

// TestCompactBoundedMemory: the compact path does not hold the graph.
// Its buffers (the stream's sort runs, readers and writers) are a fixed
// cost, and the picture's projection is bounded by the timeline's rows
// (2,000 here, maxEventRows in a report), so the test compares the growth
// of the peak heap from 5,000 to 25,000 events (the collector kept
// tight): the compact graph part grows by less than 2.5 KiB per event
// (replay's index, which dominates it, and its transient records while it
// is built) and by less than the in-memory graph and engine grow by
// (about 2.7 KiB per event here, 4 KiB at a million).
func TestCompactBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates logs of 5,000 and 25,000 events")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	const small, large = 5000, 25000
	mem0, cmp0 := graphPeaks(t, small, 2000)
	mem1, cmp1 := graphPeaks(t, large, 2000)
	grow := func(a, b uint64) int64 { return (int64(b) - int64(a)) / (large - small) }
	gm, gc := grow(mem0, mem1), grow(cmp0, cmp1)
	t.Logf("peak heap: in memory %d -> %d MiB (%d B/event), compact %d -> %d MiB (%d B/event)", mem0>>20, mem1>>20, gm, cmp0>>20, cmp1>>20, gc)
	if gc > 2560 {
		t.Errorf("the compact path grows by %d bytes per event, want under 2560", gc)
	}
	if gc >= gm {
		t.Errorf("the compact path grows by %d bytes per event, not under the in-memory path's %d", gc, gm)
	}
}
