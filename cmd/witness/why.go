package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/why"
)

type whyOptions struct {
	Events []string
	Graph  string
	Seal   string
	JSON   bool
	Tmp    string
}

// whyStreamBytes is the size from which one --events log is streamed into
// a temporary graph and read in two passes (why.ExplainLog) instead of
// built in memory: the same chain, in bounded memory.
const whyStreamBytes = 64 << 20

func newWhyCmd(a *app) *cobra.Command {
	var o whyOptions
	c := &cobra.Command{
		Use:   "why NODE (--events FILE [--events FILE ...] [--seal FILE] | --graph FILE) [--json]",
		Short: "Print the causal chain of an action back to its sources (model turns, tool results, resources, user inputs)",
		Long: `why answers "why did the agent do this": it joins the logs of one run into
one graph (as 'witness graph' does with several --events) and prints the
causal chain of NODE back to its sources, one line per step with its event
id, kind and a short excerpt: the model turn that asked for a tool call, the
model input it read, the tool results and resources that input carried, and
the user's request.

NODE is an event id qualified by its log when several logs are given
(LOGNAME:e7, LOGNAME being the name of the log file's directory, or the path
as given when two logs share it), a bare event id when only one log has it,
or a graph IRI. --json prints {"node","chain":[{"event","log","kind","iri",
"excerpt","via"}],"sources","no_sources"}. Exit 0 when printed, 2 on an
unknown node (docs/design/causal-join.md). When no step is a source, the
last line says why instead of an empty list ("sources: none: ..."): the run
has no model channel (only MCP logs were given, so nothing recorded says
what asked for a call), or no model turn of the run asked for it.

--graph FILE reads a graph written by 'witness graph' (one log, or the logs
of a run joined) in place of --events, without holding the whole graph: the
chain is the one --events gives for the same logs. NODE takes the same
forms. A joined graph carries each log's LOGNAME (witness:logName on the
log's capture session node, next to the sha256 of the log) and the IRIs of
each log's nodes are scoped by that log; a graph of one log carries no
name, so its steps are printed with bare event ids (e7, not LOGNAME:e7).

One --events log of 64 MiB or more is written as a graph to a temporary
file (in --tmp DIR) and read the same way, in bounded memory; the chain is
the same.`,
		Example: `  witness why fs:e3 --events model/events.jsonl --events fs/events.jsonl
  witness why e7 --events rec/events.jsonl --json
  witness why fs:e3 --graph run.jsonld`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(a, o, args[0])
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Events, "events", nil, "event log of the run (events.jsonl); repeat for each log")
	f.StringVar(&o.Graph, "graph", "", "witness graph (JSON-LD, from 'witness graph') in place of --events")
	f.StringVar(&o.Seal, "seal", "", "seal file: the plan of the run (default: the seal each log header names); with --events")
	f.BoolVar(&o.JSON, "json", false, "print the chain as JSON")
	f.StringVar(&o.Tmp, "tmp", "", "directory for the temporary graph and sorted runs of one long --events log (default: the system temporary directory)")
	return c
}

func runWhy(a *app, o whyOptions, node string) error {
	if (o.Graph == "") == (len(o.Events) == 0) {
		return usageError(errors.New("give exactly one of --graph and --events"),
			"explain from a graph file (--graph FILE, from 'witness graph') or from the logs of a run (--events FILE, repeated)")
	}
	if o.Graph != "" && o.Seal != "" {
		return usageError(errors.New("--seal applies to --events, not to --graph"),
			"drop --seal: a graph carries the seal it was made with ('witness graph --seal')")
	}
	var ch *why.Chain
	var err error
	if o.Graph != "" {
		ch, err = whyFromGraph(o.Graph, node)
	} else {
		ch, err = whyFromEvents(a, o, node)
	}
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if o.JSON {
		b, err := json.MarshalIndent(ch, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	} else if err := ch.WriteText(&buf); err != nil {
		return err
	}
	_, err = a.stdout.Write(buf.Bytes())
	return err
}

// whyFromGraph explains node from a graph file, read twice
// (why.ExplainJSONLD).
func whyFromGraph(path, node string) (*why.Chain, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read graph", err, "check the path given to --graph; make the graph with 'witness graph --events FILE --out FILE'")
	}
	defer f.Close()
	return why.ExplainJSONLD(f, filepath.Base(path), node, why.Options{})
}

// whyFromEvents joins the logs of a run and explains node.
func whyFromEvents(a *app, o whyOptions, node string) (*why.Chain, error) {
	opts := graph.Options{}
	if o.Seal != "" {
		s, err := seal.Load(o.Seal)
		if err != nil {
			return nil, err
		}
		opts.Seal = &eventlog.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}
	}
	if len(o.Events) == 1 {
		if fi, err := os.Stat(o.Events[0]); err == nil && fi.Size() >= whyStreamBytes {
			f, err := os.Open(o.Events[0])
			if err != nil {
				return nil, exitcode.Input("read events", err, "check the path given to --events")
			}
			defer f.Close()
			return why.ExplainLog(a.progress.Reader(o.Events[0], f, true), o.Events[0], node, opts, o.Tmp, why.Options{})
		}
	}
	logs, err := readRunLogs(a, o.Events)
	if err != nil {
		return nil, err
	}
	run, err := graph.BuildRun(logs, opts)
	if err != nil {
		return nil, err
	}
	return why.Explain(run.Graph, node, why.Options{Logs: run.Logs})
}
