package main

import (
	"errors"
	"os"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// readRunLogs reads the event logs of one agent run (--events, repeatable)
// whole, for graph.BuildRun.
func readRunLogs(paths []string) ([]graph.LogInput, error) {
	if len(paths) == 0 {
		return nil, usageError(errors.New("no --events given"), "give --events FILE, once per log of the run")
	}
	out := make([]graph.LogInput, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, exitcode.Input("read events", err, "check the path given to --events; give the events.jsonl files of one run (the model channel and one per MCP server)")
		}
		out = append(out, graph.LogInput{Name: p, Data: data})
	}
	return out, nil
}
