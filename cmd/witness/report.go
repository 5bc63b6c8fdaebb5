package main

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/firewall"
	"github.com/agent-trace-witness/witness/internal/version"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/report"
	"github.com/agent-trace-witness/witness/verify"
)

type reportOptions struct {
	Events        []string
	Seal          string
	FirewallAudit string
	Keys          keyringOptions
	AllowUnsigned bool
	Output        outputOptions
	MaxTimeline   int
	MaxGraphNodes int
	MaxDetails    int
	JSON          bool
}

func newReportCmd(a *app) *cobra.Command {
	var o reportOptions
	c := &cobra.Command{
		Use:   "report --events FILE... [--seal FILE] [--firewall-audit FILE] --out report.html",
		Short: "Write an incident report: one self-contained HTML file (verdict, timeline, findings and their chains, causal graph, counterfactuals)",
		Long: `report writes one HTML file an analyst can open anywhere, offline: its CSS,
JavaScript and SVG are inline and a Content-Security-Policy forbids every
request (docs/formats/report.md, docs/design/report.md). It shows:

  - the verdict of the run (witness verify, against --seal when given,
    else integrity only) with its exit class, and the integrity of each
    log's evidence: chain, signatures, imported or unsigned warnings;
  - a timeline with one lane per actor (user, agent, model, each MCP
    server, effects); click an event for its payload, sha256 and the exact
    wire bytes from the cassette beside the log;
  - each finding with its causal chain (what 'witness why' prints), drawn;
  - the causal graph in time order (a summary per time window above
    --max-graph-nodes);
  - counterfactuals: the top blast-radius actions (replay --rank) and what
    removing each finding's cause changes;
  - the firewall's checks when --firewall-audit is given.

--events may be repeated for the logs of one run (the model channel and one
log per MCP server): they are judged as one run, as 'witness verify' judges
several --events (injection-provenance, unrequested-tool-call, ...), the
graph joins them across channels, each MCP server's lane is named by its
log's folder, and the timeline merges them by time. Above --max-timeline events the timeline shows
buckets and the event list is virtualised; payloads and wire bytes are
embedded for --max-details events (findings and their chains first).

report describes the evidence, it does not judge the run: it exits 0 once
the file is written, whatever the verdict (use 'witness verify' for an
exit code that says it). Same inputs, same bytes (set ATW_WITNESS_TS to
freeze the time printed in the page).`,
		Example: `  witness report --events rec/events.jsonl --seal seal.json --out report.html
  witness report --events model/events.jsonl --events fs/events.jsonl --seal seal.json --out report.html
  witness report --events rec/events.jsonl --firewall-audit audit.ndjson --out report.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(a, o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Events, "events", nil, "event log to report on (repeat for several logs)")
	f.StringVar(&o.Seal, "seal", "", "seal to verify the logs against (default: integrity only)")
	f.StringVar(&o.FirewallAudit, "firewall-audit", "", "firewall audit snapshot whose checks the report lists")
	o.Keys.AddFlags(c, keyUse{Legacy: true, Trust: true})
	f.BoolVar(&o.AllowUnsigned, "allow-unsigned", false, "accept event logs whose end carries no signature the keyring can check")
	o.Output.AddFlags(c, "the HTML file to write", false)
	f.BoolVar(&o.JSON, "json", false, "print the verdict, the counts and the file written as JSON")
	f.IntVar(&o.MaxTimeline, "max-timeline", report.DefaultMaxTimeline, "events drawn one by one in the timeline; above, buckets")
	f.IntVar(&o.MaxGraphNodes, "max-graph-nodes", report.DefaultMaxGraphNodes, "graph nodes drawn one by one; above, a summary per time window")
	f.IntVar(&o.MaxDetails, "max-details", report.DefaultMaxDetails, "events whose payload and wire bytes are embedded")
	_ = c.MarkFlagRequired("events")
	_ = c.MarkFlagRequired("out")
	return c
}

func runReport(a *app, o reportOptions) error {
	if o.MaxTimeline < 1 || o.MaxGraphNodes < 1 || o.MaxDetails < 1 {
		return usageError(errors.New("--max-timeline, --max-graph-nodes and --max-details must be at least 1"), "give positive limits")
	}
	o.Output.Reads(append([]string{o.Seal, o.FirewallAudit, o.Keys.Trust, o.Keys.Input(a)}, o.Events...)...)
	if err := o.Output.Check(a); err != nil {
		return err
	}
	vo, err := o.Keys.VerifyKeys(a, 0)
	if err != nil {
		return err
	}
	ro := report.Options{
		Events:        o.Events,
		Verify:        verify.Options{SealFile: o.Seal, SealKeys: vo, EndVerifier: verify.EndVerifier(vo.Keyring, vo.Trust), AllowUnsigned: o.AllowUnsigned, Progress: a.progress.Wrap(true)},
		FirewallAudit: o.FirewallAudit,
		Explainer:     report.WhyExplainer{},
		Generated:     a.getenv("ATW_WITNESS_TS"),
		Version:       version.Version,
		MaxTimeline:   o.MaxTimeline, MaxGraphNodes: o.MaxGraphNodes, MaxDetails: o.MaxDetails,
	}
	if vo.Keyring != nil || vo.Trust != nil {
		ro.AuditOptions = firewall.AuditVerifyOptions{Keys: keyring.NewVerifier(vo.Keyring, vo.Trust, nil)}
	}
	if a.getenv("GOMEMLIMIT") == "" {
		// a large log's report holds replay's index (report.CompactAbove):
		// collect before the heap doubles it, as replay does
		debug.SetMemoryLimit(replay.MemoryLimit)
	}
	if a.getenv("GOGC") == "" {
		// fewer fresh pages for a few more collections (report.GCPercent)
		debug.SetGCPercent(report.GCPercent)
	}
	d, err := report.Build(ro)
	if err != nil {
		return err
	}
	if err := o.Output.Publish(a, nil, func(w io.Writer) error { return report.WriteHTML(w, d) }); err != nil {
		return err
	}
	return printReport(a, o, d)
}

// reportResult is the --json object of report (docs/formats/cli-json.md,
// "report").
type reportResult struct {
	Result   string   `json:"result"`
	V        int      `json:"v"`
	Verdict  string   `json:"verdict"`
	Class    string   `json:"class"`
	Findings int      `json:"findings"`
	Events   int      `json:"events"`
	Inputs   []string `json:"inputs"`
	Out      string   `json:"out"`
}

// printReport says what the report holds and where it went.
func printReport(a *app, o reportOptions, d *report.Data) error {
	if o.JSON {
		return printJSON(a, reportResult{Result: "report", V: cliJSONVersion, Verdict: d.Verdict.Verdict, Class: d.Verdict.Class,
			Findings: len(d.Findings), Events: d.Timeline.Total, Inputs: append([]string{}, o.Events...), Out: o.Output.File()})
	}
	fmt.Fprintf(a.stdout, "verdict: %s (exit class %s); %d finding(s), %d event(s)\n", d.Verdict.Verdict, d.Verdict.Class, len(d.Findings), d.Timeline.Total)
	fmt.Fprintf(a.stdout, "wrote %s: open it in a browser\n", o.Output.File())
	return nil
}
