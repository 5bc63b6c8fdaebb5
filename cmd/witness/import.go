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
active key of --keyring (or $WITNESS_KEYRING when that file exists). That
signature vouches for the conversion (this log is what import wrote from
FILE, unchanged since), not for the events: the witness never saw them on
the wire. Every line keeps source "imported", which the chain and the
signature cover, and 'witness verify' says "imported, not observed".`,
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
		fmt.Fprintf(a.stderr, "witness: warning: no keyring: the session end is not signed (pass --keyring)\n")
	}
	ts := eventlog.Timestamp(a.getenv)
	opts := derive.ImportOptions{Name: filepath.Base(o.File), TS: ts, Signers: signers, Redactor: red}
	if !a.quiet { // --quiet (the root flag): only the summary line
		opts.OnEvent = func(e *eventlog.Event) {
			who := e.Tool + e.Role
			switch {
			case e.Call != "":
				fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> tool_call %s\n", e.Legacy.Line, e.Kind, who, e.ID, e.Call)
			case e.Input != "":
				fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> model_input %s\n", e.Legacy.Line, e.Kind, who, e.ID, e.Input)
			case e.Legacy != nil && e.Legacy.Orphan:
				fmt.Fprintf(a.stdout, "line %d: %s %s (%s) -> no open call: orphan\n", e.Legacy.Line, e.Kind, who, e.ID)
			}
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
	kind := "event log"
	if rep.Format == derive.LegacyATWCassette {
		kind = "cassette"
	}
	signed := "unsigned"
	if len(signers) > 0 {
		signed = "signed by key " + signers[0].KeyID() + " as imported, not observed"
	}
	fmt.Fprintf(a.stdout, "witness: imported %d events from %s (atw-0.1.0 %s) to %s: %d paired (earliest open call of the same tool), %d orphans; session %s, %s\n",
		rep.Events, filepath.Base(o.File), kind, o.Output.Out, rep.Paired, len(rep.Orphans), rep.Session, signed)
	return nil
}
