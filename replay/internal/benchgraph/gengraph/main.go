// Command gengraph writes a deterministic benchmark graph for replay
// (scripts/bench.d/40-replay.sh): the JSON-LD graph of a generated session
// of about -nodes nodes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/replay/internal/benchgraph"
)

func main() {
	nodes := flag.Int("nodes", 10000, "approximate number of graph nodes")
	out := flag.String("out", "", "output file (JSON-LD graph)")
	events := flag.String("events", "", "also write the event log to this file")
	flag.Parse()
	if err := run(*nodes, *out, *events); err != nil {
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
		if err := benchgraph.Write(bw, nodes); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	g, err := graph.Build(benchgraph.New(nodes), graph.Options{})
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
