// Command gengraph writes a deterministic benchmark graph for replay
// (scripts/bench.d/40-replay.sh): the JSON-LD graph of a generated session
// of about -nodes nodes. With -measure it writes nothing: it builds the
// graph in memory and prints one tab-separated line with the time of
// indexing it for replay, of one removal (the busiest tool's definition)
// and of a full ranking, and the process's peak RSS after building the
// graph and at the end.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/replay"
)

// peakRSS returns the process's peak resident set size in MiB (Linux
// VmHWM), or -1 where /proc is unavailable.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseFloat(string(f[1]), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return -1
}

func measureReplay(nodes int) error {
	g, err := graph.Build(synthlog.NewGraph(nodes), graph.Options{})
	if err != nil {
		return err
	}
	runtime.GC()
	rssGraph := peakRSS()
	t0 := time.Now()
	e, err := replay.NewEngine(g)
	if err != nil {
		return err
	}
	t1 := time.Now()
	r, err := e.Counterfactual(replay.Options{Remove: []string{graph.ToolIRI(graph.SessionIRI(synthlog.GraphSession), synthlog.BusiestTool)}})
	if err != nil {
		return err
	}
	t2 := time.Now()
	rk := e.Rank(10)
	t3 := time.Now()
	fmt.Printf("%d\t%d\t%.3f\t%.3f\t%d\t%.3f\t%s\t%.0f\t%.0f\n", g.Len(), rk.Total,
		t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), len(r.CompensationSet), t3.Sub(t2).Seconds(), rk.Method.Method, rssGraph, peakRSS())
	return nil
}

func main() {
	nodes := flag.Int("nodes", 10000, "approximate number of graph nodes")
	out := flag.String("out", "", "output file (JSON-LD graph)")
	events := flag.String("events", "", "also write the event log to this file")
	measure := flag.Bool("measure", false, "time replay on the graph in memory instead of writing it")
	flag.Parse()
	var err error
	if *measure {
		err = measureReplay(*nodes)
	} else {
		err = run(*nodes, *out, *events)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gengraph:", err)
		os.Exit(1)
	}
}

func run(nodes int, out, events string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if events != "" {
		f, err := os.Create(events)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		if err := synthlog.WriteGraph(bw, nodes); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	g, err := graph.Build(synthlog.NewGraph(nodes), graph.Options{})
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := g.WriteJSONLD(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gengraph: %d nodes\n", g.Len())
	return f.Close()
}
