package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
)

// DefaultCompactAbove is the number of events of a single log above which
// the graph-derived parts of the page (chains, counterfactuals, ranking,
// picture) are computed from compact projections of the streamed graph
// instead of the whole *graph.Graph (docs/design/report.md).
const DefaultCompactAbove = 50000

// Bounds of the subgraph a compact report explains the findings on: the
// events the findings' events link to (call, input, cause, during,
// concerns), transitively, at most maxChainEvents of them.
const maxChainEvents = 4096

// compactGraph streams the graph of one log (graph.StreamJSONLD, bounded
// by its external sort) once, to two readers at the same time: the replay
// engine (replay.NewEngineJSONLD, which keeps its index, not the graph)
// and a scan that keeps only what the page needs of the graph:
//   - the nodes of the events the findings' chains can reach (want: event
//     ids), as a subgraph why.Explain walks;
//   - the node each finding's event names (activity, else first entity);
//   - the label of each activity (for the ranking);
//   - the picture's projection of the drawn nodes (gnode).
func compactGraph(file string, logs []*logState, want map[string]bool, laneAt func(int, string, int) int, o Options) (*runState, []string) {
	var notes []string
	prA, pwA := io.Pipe()
	prB, pwB := io.Pipe()
	var wg sync.WaitGroup
	var eng *replay.Engine
	var engErr, scanErr error
	name := filepath.Base(file)
	wg.Add(2)
	go func() {
		defer wg.Done()
		eng, engErr = replay.NewEngineJSONLD(prA, name)
		_, _ = io.Copy(io.Discard, prA) // the rest, so that the stream never blocks
	}()
	run := &runState{compact: true, primary: map[string]string{}, labels: map[string]string{}}
	var sub []*graph.Node
	ents := map[string]string{}
	classes := nodeClasses(logs)
	drawLabels := true
	go func() {
		defer wg.Done()
		scanErr = graph.ScanJSONLD(prB, name, func(n *graph.Node) error {
			ev := n.Value(graph.WEventID)
			kind := graph.DrawKind(n)
			if ev != "" && want[ev] {
				sub = append(sub, n)
				switch {
				case kind == "activity" && run.primary[ev] == "":
					run.primary[ev] = n.ID
				case kind == "entity" && ents[ev] == "":
					ents[ev] = n.ID
				}
			} else if ev == "" && pathWanted(n.ID, want) {
				sub = append(sub, n)
			}
			if kind == "activity" {
				run.labels[n.ID] = graph.NodeLabel(n)
			}
			if g, ok := projectNode(n, 0, logs, classes, laneAt, drawLabels); ok {
				run.ns = append(run.ns, g)
				if drawLabels && len(run.ns) > o.MaxGraphNodes {
					// a summary draws no node labels
					drawLabels = false
					for i := range run.ns {
						run.ns[i].label = ""
					}
				}
			}
			return nil
		})
		_, _ = io.Copy(io.Discard, prB)
	}()
	var err error
	f, err := os.Open(file)
	if err != nil {
		err = exitcode.Input("read events", err, "check the path given to --events")
	} else {
		_, err = graph.StreamJSONLD(graph.NewEventSource(f, file), io.MultiWriter(pwA, pwB), graph.Options{}, graph.StreamOptions{})
		f.Close()
	}
	pwA.CloseWithError(err)
	pwB.CloseWithError(err)
	wg.Wait()
	if err == nil {
		err = scanErr
	}
	if err != nil {
		return nil, append(notes, fmt.Sprintf("no causal graph: %v", err))
	}
	for ev, id := range ents {
		if run.primary[ev] == "" {
			run.primary[ev] = id
		}
	}
	run.g = &graph.Graph{Nodes: sub}
	if engErr != nil {
		run.engErr = engErr
	} else {
		run.eng = eng
	}
	return run, notes
}

// pathWanted reports whether an IRI without an event id names a wanted
// event in one of its segments (a model turn's tool call:
// ".../msg/e4/tool-call/0").
func pathWanted(iri string, want map[string]bool) bool {
	for _, s := range strings.Split(iri, "/") {
		if want[s] {
			return true
		}
	}
	return false
}

// chainEvents are the events whose nodes a finding's chain can reach: the
// findings' events and, transitively, the events they link to, at most
// maxChainEvents (false when the bound cut the closure).
func chainEvents(start []string, links map[string][]string) (map[string]bool, bool) {
	want := map[string]bool{}
	queue := []string{}
	for _, ev := range start {
		if ev != "" && !want[ev] {
			want[ev] = true
			queue = append(queue, ev)
		}
	}
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		for _, l := range links[ev] {
			if want[l] {
				continue
			}
			if len(want) >= maxChainEvents {
				return want, false
			}
			want[l] = true
			queue = append(queue, l)
		}
	}
	return want, true
}
