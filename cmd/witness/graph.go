package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/verify"
)

// graphFormats are the values of graph --format, the first the default.
var graphFormats = []string{"jsonld", "nquads", "dot"}

type graphOptions struct {
	Events     []string
	Seal       string
	Format     string
	Output     outputOptions
	NoPayloads bool
	MaxNodes   int
	Classes    string
	Title      string
	TempDir    string
	// Keys verify the seal when --format dot colours verify's findings.
	Keys          keyringOptions
	AllowUnsigned bool
	// FirewallAudit is an audit snapshot whose checks are added as an
	// overlay (--firewall-audit; see addFirewallAudit in firewall.go).
	FirewallAudit string
	// JSON prints the summary (digest, quads, format, files) as one JSON
	// object on stdout; the graph then goes to --out FILE.
	JSON bool
}

// graphLong is graph's help.
const graphLong = `graph turns the event log into a W3C PROV-DM causal graph with PROV-O terms
(docs/formats/graph.md): the AI agent, the MCP server and the witness are
prov:Agent; tool calls and model turns prov:Activity; arguments, results,
messages and external effects prov:Entity; the seal is the prov:Plan of each
activity's qualified association. Every node has an IRI derived from the
session and event ids: no blank nodes.

--format jsonld (default) writes one canonical JSON-LD document with an
embedded context (nothing is ever fetched). --format nquads writes RDFC-1.0
canonical N-Quads. Both are streamed with bounded memory (external sort)
for long logs (one log; a joined run is built in memory), and so is the
summary of --format dot. --format dot writes a Graphviz picture (entities ellipses, activities
boxes, agents houses), time left to right: one rank per event, causal
edges from each node to its causes; graphs above --max-nodes are drawn as
a summary, one cluster per time window. With --seal, the findings of
'witness verify --seal S --events FILE' colour their events (violation
red, tampered purple, incomplete grey, notice blue), with the keys verify
would use (--keyring, --trust); --classes FILE ({"e12": "violation", ...},
event ids or node IRIs) adds or overrides classes.

--events is repeatable: the logs of one agent run (the model channel of
'witness proxy --listen' and one log per MCP server) are joined into one
graph. Each log is checked on its own; node IRIs are then scoped by each
log's identity (urn:witness:<session>;<16 hex of its sha256>), and model tool
calls, MCP tool calls, results and the model inputs that carry them back are
linked by content (docs/design/causal-join.md). The same log twice, or two
logs with one session id, are refused (exit 2).

The graph digest, the sha256 of the canonical N-Quads, is printed on stderr
whatever the format. --json prints it, with the number of quads, the format
and the files, as one JSON object on stdout instead (docs/formats/cli-json.md);
the graph then needs --out FILE.`

func newGraphCmd(a *app) *cobra.Command {
	var o graphOptions
	c := &cobra.Command{
		Use:   "graph --events FILE [--events FILE ...] [--seal FILE] [--format jsonld|nquads|dot] [--out FILE]",
		Short: "Turn an event log into a canonical PROV-DM causal graph (JSON-LD, N-Quads or DOT)",
		Long:  graphLong,
		Example: `  witness graph --events rec/events.jsonl --out graph.jsonld
  witness graph --events rec/events.jsonl --format nquads --out graph.nq
  witness graph --events rec/events.jsonl --seal seal.json --format dot | dot -Tsvg > graph.svg
  witness graph --events model/events.jsonl --events fs/events.jsonl --out run.jsonld
  witness graph --events rec/events.jsonl --out graph.jsonld --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraph(a, o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Events, "events", nil, "event log to read (events.jsonl); repeat for the logs of one run")
	f.StringVar(&o.Seal, "seal", "", "seal file: the plan of the session (default: the seal the log header names)")
	f.StringVar(&o.Format, "format", graphFormats[0], "output format: jsonld, nquads or dot")
	o.Output.AddFlags(c, "file to write (default: standard output)", true)
	f.BoolVar(&o.NoPayloads, "no-payloads", false, "leave payload contents (prov:value) out, keep their hashes")
	f.IntVar(&o.MaxNodes, "max-nodes", graph.DefaultDOTMaxNodes, "dot: draw a summary above this many nodes")
	f.StringVar(&o.Classes, "classes", "", "dot: JSON object of event id or node IRI -> class (violation, tampered, incomplete, warning, notice, removed, highlight)")
	f.StringVar(&o.Title, "title", "", "dot: picture title")
	f.StringVar(&o.TempDir, "tmp", "", "jsonld, nquads, dot: directory for the sorted runs of long logs (default: the system temporary directory)")
	o.Keys.AddFlags(c, keyUse{Legacy: true, Trust: true})
	f.BoolVar(&o.AllowUnsigned, "allow-unsigned", false, "dot with --seal: accept an event log whose end carries no signature the keyring can check")
	f.StringVar(&o.FirewallAudit, "firewall-audit", "", "firewall audit snapshot (org.social-harness/firewall-audit/v4): add each check as an activity that used its message")
	f.BoolVar(&o.JSON, "json", false, "print the digest, quads, format and files as JSON on stdout (needs --out FILE)")
	_ = c.MarkFlagRequired("events")
	completeChoices(c, "format", graphFormats...)
	return c
}

func runGraph(a *app, o graphOptions) error {
	if !slices.Contains(graphFormats, o.Format) {
		return usageError(fmt.Errorf("unknown --format %q", o.Format), "use --format jsonld, nquads or dot")
	}
	if o.JSON && o.Output.File() == "" {
		return usageError(errors.New("--json prints the summary on stdout, so the graph needs a file"), "add --out FILE")
	}
	if o.Format != "dot" && (o.Classes != "" || o.Title != "") {
		return usageError(fmt.Errorf("--classes and --title apply to --format dot only"), "add --format dot")
	}
	o.Output.Reads(append(append([]string(nil), o.Events...), o.Seal, o.Classes, o.FirewallAudit, o.Keys.Trust, o.Keys.Input(a))...)
	if err := o.Output.Check(a); err != nil {
		return err
	}
	wo, err := graphWriteOptions(a, o)
	if err != nil {
		return err
	}
	var src graph.EventSource
	var logs []graph.LogInput
	if len(o.Events) == 1 {
		in, err := os.Open(o.Events[0])
		if err != nil {
			return exitcode.Input("read events", err, "check the path given to --events; give the events.jsonl that 'witness capture' wrote")
		}
		defer in.Close()
		src = graph.NewEventSource(a.progress.Reader(o.Events[0], in, true), o.Events[0])
	} else if logs, err = readRunLogs(a, o.Events); err != nil {
		return err
	}
	var st graph.WriteStats
	write := func(out io.Writer) (err error) {
		st, err = graph.Write(out, src, logs, wo)
		return err
	}
	// the graph is derived from the events and regenerated at will: it is
	// published atomically but not fsynced (atomicfile.Options.NoSync)
	noSync := func(r atomicfile.Options) atomicfile.Options { r.NoSync, r.DropCache = true, true; return r }
	if err := o.Output.Publish(a, noSync, write); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(a, newGraphResult(o, st))
	}
	fmt.Fprintf(a.notes(), "witness: graph digest sha256:%s (%d quads)\n", st.Digest, st.Quads)
	if out := o.Output.File(); out != "" {
		fmt.Fprintf(a.notes(), "witness: wrote %s (%s)\n", out, o.Format)
	}
	return nil
}

// graphWriteOptions are graph.Write's options for o: the seal the graph
// names, the DOT classes (--classes, and verify's findings with --seal) and
// the firewall audit overlay.
func graphWriteOptions(a *app, o graphOptions) (graph.WriteOptions, error) {
	wo := graph.WriteOptions{Format: o.Format, Build: graph.Options{OmitPayloads: o.NoPayloads},
		Stream: graph.StreamOptions{TempDir: o.TempDir}}
	if o.Seal != "" {
		s, err := seal.Load(o.Seal)
		if err != nil {
			return wo, err
		}
		wo.Build.Seal = &eventlog.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}
	}
	classes, err := readClasses(o.Classes)
	if err != nil {
		return wo, err
	}
	if o.Format == "dot" && o.Seal != "" {
		found, err := verifyClasses(a, o)
		if err != nil {
			return wo, err
		}
		for k, v := range classes {
			found[k] = v // --classes wins
		}
		classes = found
	}
	wo.DOT = graph.DOTOptions{Classes: classes, MaxNodes: o.MaxNodes, Title: o.Title}
	if o.FirewallAudit != "" {
		wo.Overlay = func(g *graph.Graph) error { return addFirewallAudit(a, g, o.FirewallAudit) }
	}
	return wo, nil
}

// readClasses reads the --classes file: a JSON object of event id or node
// IRI -> DOT class. "" is no classes.
func readClasses(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError(fmt.Errorf("read classes: %w", err), "")
	}
	if err := jsonlimit.CheckIn(data, path, 1); err != nil {
		return nil, usageError(fmt.Errorf("classes %w", err), `write {"e12": "violation", ...}`)
	}
	var classes map[string]string
	if err := json.Unmarshal(data, &classes); err != nil {
		return nil, usageError(fmt.Errorf("classes %s: not a JSON object of strings: %w", path, err), `write {"e12": "violation", ...}`)
	}
	return classes, nil
}

// verifyClasses runs verify on the log against --seal and returns the DOT
// class of each event a finding names: the worst finding's class.
func verifyClasses(a *app, o graphOptions) (map[string]string, error) {
	vo, err := o.Keys.VerifyKeys(a, 0)
	if err != nil {
		return nil, err
	}
	rep, err := verify.Run(verify.Options{SealFile: o.Seal, EventsFile: first(o.Events), RunEvents: rest(o.Events), SealKeys: vo,
		EndVerifier: verify.EndVerifier(vo.Keyring, vo.Trust), AllowUnsigned: o.AllowUnsigned, Stdin: a.stdin})
	if err != nil {
		return nil, err
	}
	rank := map[string]int{"notice": 1, "violation": 2, "unauthenticated": 3, "incomplete": 4, "tampered": 5}
	out := map[string]string{}
	for _, f := range rep.Findings {
		if f.EventID == "" {
			continue
		}
		if c := string(f.Class); rank[c] > rank[out[f.EventID]] {
			out[f.EventID] = c
		}
	}
	fmt.Fprintf(a.notes(), "witness: %s\n", rep.VerdictLine())
	return out, nil
}
