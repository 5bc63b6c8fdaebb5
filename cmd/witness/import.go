package main

import (
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/spf13/cobra"
	"io"
	"os"
	"path/filepath"
)

type importOptions struct {
	From   string
	File   string
	Output outputOptions
	Keys   keyringOptions
	Redact redactOptions
	JSON   bool
}

func newImportCmd(a *app) *cobra.Command {
	var o importOptions
	c := &cobra.Command{
		Use:   "import --from atw-0.1.0 FILE --out EVENTS",
		Short: "Convert an agent-trace-witness 0.1.0 event log or cassette into a witness event log",
		Long: `import reads an agent-trace-witness 0.1.0 file, an event log (7-key lines:
payload_sha256, role, seal_ref, tool, ts, type, unsealed) or a cassette
(timestamp, type, payload), telling which from its first line, and writes a
witness event log (docs/formats/events.md) with source "imported".

0.1.0 lines carry no ids, so import pairs each tool_response with the
EARLIEST open tool_call of the same tool (0.1.0's graph took the newest open
call of any tool, which mis-pairs interleaved calls), names in each
external_effect the latest tool_call of its tool, and in each model_output
the latest model_input. The session header says so (pairing
"earliest-open-same-tool", imported_from "atw-0.1.0", notes). Event-log
hashes are kept as payload_sha256 with no payload (0.1.0 never stored
payloads); each line's unsealed flag and number are kept under "legacy".

It prints one line per paired event. The session end is signed with the
active key of --keyring, else of the default keyring (docs/formats/keys.md). That
signature vouches for the conversion (this log is what import wrote from
FILE, unchanged since), not for the events: the witness never saw them on
the wire. Every line keeps source "imported", which the chain and the
signature cover, and 'witness verify' says "imported, not observed".

--json prints the summary and every pairing as one JSON object instead
(docs/formats/cli-json.md).`,
		Example: `  witness import --from atw-0.1.0 hansard_scenario_1.jsonl --out events.jsonl
  witness import --from atw-0.1.0 mcp_stdio_001.jsonl --out events.jsonl --keyring keys.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			return runImport(a, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.From, "from", "", "format of FILE: atw-0.1.0")
	o.Output.AddFlags(c, "event log to write (a new file unless --force)", false)
	o.Keys.AddFlags(c, recordingKeys)
	o.Redact.AddFlags(c, "")
	f.BoolVar(&o.JSON, "json", false, "print the summary and the pairings as JSON")
	completeChoices(c, "from", derive.ImportFormatATW010)
	c.MarkFlagRequired("from")
	c.MarkFlagRequired("out")
	return c
}

func runImport(a *app, o importOptions) error {
	if o.From != derive.ImportFormatATW010 {
		return usageError(fmt.Errorf("--from %q is not a format import reads", o.From), "use --from atw-0.1.0")
	}
	o.Output.Reads(o.File, o.Redact.RulesFile, o.Redact.KeyFile, o.Keys.Input(a))
	if err := o.Output.Check(a); err != nil {
		return err
	}
	in, err := os.Open(o.File)
	if err != nil {
		return exitcode.Input("read 0.1.0 file", err, "check the path of the file to import")
	}
	defer in.Close()
	red, err := o.Redact.Load(a)
	if err != nil {
		return err
	}
	signers, err := captureSigners(a, &o.Keys)
	if err != nil {
		return err
	}
	if len(signers) == 0 {
		fmt.Fprintf(a.stderr, "witness: warning: no keyring: the session end is not signed (pass --keyring, or create the default keyring with 'witness key generate')\n")
	}
	ts := eventlog.Timestamp(a.getenv)
	opts := derive.ImportOptions{Name: filepath.Base(o.File), TS: ts, Signers: signers, Redactor: red}
	links := []importLinkResult{}
	opts.OnEvent = func(e *eventlog.Event) {
		l, ok := importLink(e)
		switch {
		case !ok || a.quiet && !o.JSON:
		case o.JSON:
			links = append(links, l)
		default:
			printImportLink(a, l)
		}
	}
	var rep *derive.ImportReport
	err = o.Output.Publish(a, nil, func(w io.Writer) error {
		var err error
		rep, err = derive.ImportATW(in, w, opts)
		var coded *exitcode.Error
		if err != nil && !errors.As(err, &coded) {
			err = exitcode.New(exitcode.Failure, err, "")
		}
		return err
	})
	if err != nil {
		return err
	}
	res := importResult{Result: "import", V: cliJSONVersion, File: o.File, Source: rep.Format, Out: o.Output.Out,
		Events: rep.Events, Paired: rep.Paired, Orphans: append([]string{}, rep.Orphans...), Session: rep.Session, Links: links}
	if len(signers) > 0 {
		res.SignedBy = signers[0].KeyID()
	}
	return printImport(a, o.JSON, res)
}

// importLink is what import says about one event it paired (or could not
// pair); ok is false for the events it says nothing about.
func importLink(e *eventlog.Event) (l importLinkResult, ok bool) {
	if e.Legacy == nil || e.Call == "" && e.Input == "" && !e.Legacy.Orphan {
		return l, false
	}
	return importLinkResult{Line: e.Legacy.Line, Event: e.ID, Kind: string(e.Kind), Name: e.Tool + e.Role,
		ToolCall: e.Call, ModelInput: e.Input, Orphan: e.Call == "" && e.Input == ""}, true
}

func printImportLink(a *app, l importLinkResult) {
	switch {
	case l.ToolCall != "":
		fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> tool_call %s\n", l.Line, l.Kind, l.Name, l.Event, l.ToolCall)
	case l.ModelInput != "":
		fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> model_input %s\n", l.Line, l.Kind, l.Name, l.Event, l.ModelInput)
	default:
		fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> no open call: orphan\n", l.Line, l.Kind, l.Name, l.Event)
	}
}

// printImport prints import's summary: a line, or with --json one object.
func printImport(a *app, asJSON bool, r importResult) error {
	if asJSON {
		return printJSON(a, r)
	}
	kind := "event log"
	if r.Source == derive.LegacyATWCassette {
		kind = "cassette"
	}
	signed := "unsigned"
	if r.SignedBy != "" {
		signed = "signed by key " + r.SignedBy + " as imported, not observed"
	}
	fmt.Fprintf(a.stdout, "witness: imported %d events from %s (atw-0.1.0 %s) to %s: %d paired (earliest open call of the same tool), %d orphans; session %s, %s\n",
		r.Events, filepath.Base(r.File), kind, r.Out, r.Paired, len(r.Orphans), r.Session, signed)
	return nil
}
