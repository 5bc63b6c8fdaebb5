package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// readRunLogs reads the event logs of one agent run (--events, repeatable)
// whole, for graph.BuildRun, each through the progress line.
func readRunLogs(a *app, paths []string) ([]graph.LogInput, error) {
	if len(paths) == 0 {
		return nil, usageError(errors.New("no --events given"), "give --events FILE, once per log of the run")
	}
	out := make([]graph.LogInput, 0, len(paths))
	for _, p := range paths {
		data, err := readEventsFile(a, p)
		if err != nil {
			return nil, exitcode.Input("read events", err, "check the path given to --events; give the events.jsonl files of one run (the model channel and one per MCP server)")
		}
		out = append(out, graph.LogInput{Name: p, Data: data})
	}
	return out, nil
}

// readEventsFile reads the event log p whole, through the progress line
// when it is on.
func readEventsFile(a *app, p string) ([]byte, error) {
	if a.progress == nil {
		return os.ReadFile(p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if fi, err := f.Stat(); err == nil {
		b.Grow(int(fi.Size()) + 1)
	}
	_, err = io.Copy(&b, a.progress.Reader(p, f, true))
	return b.Bytes(), err
}
