package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/seal"
)

type graphOptions struct {
	Events     string
	Seal       string
	Format     string
	Output     outputOptions
	NoPayloads bool
	MaxNodes   int
	Classes    string
	Title      string
	TempDir    string
	// FirewallAudit is an audit snapshot whose checks are added as an
	// overlay (--firewall-audit; see addFirewallAudit in firewall.go).
	FirewallAudit string
}

func newGraphCmd(a *app) *cobra.Command {
	var o graphOptions
	c := &cobra.Command{
		Use:   "graph --events FILE [--seal FILE] [--format jsonld|nquads|dot] [--out FILE]",
		Short: "Turn an event log into a canonical PROV-DM causal graph (JSON-LD, N-Quads or DOT)",
		Long: `graph turns the event log into a W3C PROV-DM causal graph with PROV-O terms
(docs/formats/graph.md): the AI agent, the MCP server and the witness are
prov:Agent; tool calls and model turns prov:Activity; arguments, results,
messages and external effects prov:Entity; the seal is the prov:Plan of each
activity's qualified association. Every node has an IRI derived from the
session and event ids: no blank nodes.

--format jsonld (default) writes one canonical JSON-LD document with an
embedded context (nothing is ever fetched). --format nquads writes RDFC-1.0
canonical N-Quads. Both are streamed with bounded memory (external sort)
for long logs. --format dot writes a Graphviz picture (entities ellipses, activities
boxes, agents houses); graphs above --max-nodes are drawn as a summary, and
--classes FILE ({"e12": "violation", ...}, event ids or node IRIs) colours
findings.

The graph digest, the sha256 of the canonical N-Quads, is printed on stderr
whatever the format.`,
		Example: `  witness graph --events rec/events.jsonl --out graph.jsonld
  witness graph --events rec/events.jsonl --format nquads --out graph.nq
  witness graph --events rec/events.jsonl --seal seal.json --format dot | dot -Tsvg > graph.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraph(a, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Events, "events", "", "event log to read (events.jsonl)")
	f.StringVar(&o.Seal, "seal", "", "seal file: the plan of the session (default: the seal the log header names)")
	f.StringVar(&o.Format, "format", "jsonld", "output format: jsonld, nquads or dot")
	o.Output.AddFlags(c, "file to write (default: standard output)", true)
	f.BoolVar(&o.NoPayloads, "no-payloads", false, "leave payload contents (prov:value) out, keep their hashes")
	f.IntVar(&o.MaxNodes, "max-nodes", graph.DefaultDOTMaxNodes, "dot: draw a summary above this many nodes")
	f.StringVar(&o.Classes, "classes", "", "dot: JSON object of event id or node IRI -> class (violation, tampered, incomplete, warning, notice, removed, highlight)")
	f.StringVar(&o.Title, "title", "", "dot: picture title")
	f.StringVar(&o.TempDir, "tmp", "", "jsonld, nquads: directory for the sorted runs of long logs (default: the system temporary directory)")
	f.StringVar(&o.FirewallAudit, "firewall-audit", "", "firewall audit snapshot (org.social-harness/firewall-audit/v4): add each check as an activity that used its message")
	_ = c.MarkFlagRequired("events")
	return c
}

func runGraph(a *app, o graphOptions) error {
	switch o.Format {
	case "jsonld", "nquads", "dot":
	default:
		return usageError(fmt.Errorf("unknown --format %q", o.Format), "use --format jsonld, nquads or dot")
	}
	if o.Format != "dot" && (o.Classes != "" || o.Title != "") {
		return usageError(fmt.Errorf("--classes and --title apply to --format dot only"), "add --format dot")
	}
	o.Output.Reads(o.Events, o.Seal, o.Classes, o.FirewallAudit)
	if err := o.Output.Check(a); err != nil {
		return err
	}
	opts := graph.Options{OmitPayloads: o.NoPayloads}
	if o.Seal != "" {
		s, err := seal.Load(o.Seal)
		if err != nil {
			return err
		}
		opts.Seal = &graph.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}
	}
	var classes map[string]string
	if o.Classes != "" {
		data, err := os.ReadFile(o.Classes)
		if err != nil {
			return usageError(fmt.Errorf("read classes: %w", err), "")
		}
		if err := jsonlimit.CheckIn(data, o.Classes, 1); err != nil {
			return usageError(fmt.Errorf("classes %w", err), `write {"e12": "violation", ...}`)
		}
		if err := json.Unmarshal(data, &classes); err != nil {
			return usageError(fmt.Errorf("classes %s: not a JSON object of strings: %w", o.Classes, err), `write {"e12": "violation", ...}`)
		}
	}
	in, err := os.Open(o.Events)
	if err != nil {
		return exitcode.Input("read events", err, "check the path given to --events; give the events.jsonl that 'witness capture' wrote")
	}
	defer in.Close()
	src := graph.NewEventSource(in, o.Events)

	var digest string
	var quads int64
	write := func(out io.Writer) error {
		if o.Format == "jsonld" && o.FirewallAudit == "" {
			st, err := graph.StreamJSONLD(src, out, opts, graph.StreamOptions{TempDir: o.TempDir})
			if err != nil {
				return err
			}
			digest, quads = st.Digest, st.Quads
			return nil
		}
		if o.Format == "nquads" && o.FirewallAudit == "" {
			st, err := graph.StreamNQuads(src, out, opts, graph.StreamOptions{TempDir: o.TempDir})
			if err != nil {
				return err
			}
			digest, quads = st.Digest, st.Quads
			return nil
		}
		g, err := graph.Build(src, opts)
		if err != nil {
			return err
		}
		if o.FirewallAudit != "" {
			if err := addFirewallAudit(a, g, o.FirewallAudit); err != nil {
				return err
			}
		}
		var cnt lineCounter
		if digest, err = g.WriteNQuads(&cnt); err != nil {
			return err
		}
		quads = cnt.n
		if o.Format == "jsonld" {
			err = g.WriteJSONLD(out)
		} else if o.Format == "nquads" {
			_, err = g.WriteNQuads(out)
		} else {
			err = g.WriteDOT(out, graph.DOTOptions{Classes: classes, MaxNodes: o.MaxNodes, Title: o.Title})
		}
		if err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("write graph: %w", err), "")
		}
		return nil
	}
	// the graph is derived from the events and regenerated at will: it is
	// published atomically but not fsynced (atomicfile.Options.NoSync)
	noSync := func(r atomicfile.Options) atomicfile.Options { r.NoSync = true; return r }
	if err := o.Output.Publish(a, noSync, write); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "witness: graph digest sha256:%s (%d quads)\n", digest, quads)
	if out := o.Output.File(); out != "" {
		fmt.Fprintf(a.stderr, "witness: wrote %s (%s)\n", out, o.Format)
	}
	return nil
}

type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
