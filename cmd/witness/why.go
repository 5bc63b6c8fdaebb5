package main

import (
	"bytes"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/why"
)

type whyOptions struct {
	Events []string
	Seal   string
	JSON   bool
}

func newWhyCmd(a *app) *cobra.Command {
	var o whyOptions
	c := &cobra.Command{
		Use:   "why NODE --events FILE [--events FILE ...] [--seal FILE] [--json]",
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
"excerpt","via"}],"sources"}. Exit 0 when printed, 2 on an unknown node
(docs/design/causal-join.md).`,
		Example: `  witness why fs:e3 --events model/events.jsonl --events fs/events.jsonl
  witness why e7 --events rec/events.jsonl --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(a, o, args[0])
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Events, "events", nil, "event log of the run (events.jsonl); repeat for each log")
	f.StringVar(&o.Seal, "seal", "", "seal file: the plan of the run (default: the seal each log header names)")
	f.BoolVar(&o.JSON, "json", false, "print the chain as JSON")
	_ = c.MarkFlagRequired("events")
	return c
}

func runWhy(a *app, o whyOptions, node string) error {
	logs, err := readRunLogs(o.Events)
	if err != nil {
		return err
	}
	opts := graph.Options{}
	if o.Seal != "" {
		s, err := seal.Load(o.Seal)
		if err != nil {
			return err
		}
		opts.Seal = &graph.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}
	}
	run, err := graph.BuildRun(logs, opts)
	if err != nil {
		return err
	}
	ch, err := why.Explain(run.Graph, node, why.Options{Logs: run.Logs})
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
