package main

import (
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/spf13/cobra"
)

type captureAppendOptions struct {
	Events   string
	Keys     keyringOptions
	KeepOpen bool
	AllowUns bool
	Redact   redactOptions
	Anchor   anchorOptions // --log
	JSON     bool
}

func newCaptureAppendCmd(a *app) *cobra.Command {
	var o captureAppendOptions
	c := &cobra.Command{
		Use:   "append --events FILE [--keyring PATH] [--keep-open] < EVENTS.jsonl",
		Short: "Append events reported by an agent framework (JSONL on stdin) to an event log",
		Long: `append reads events as JSONL on stdin, one object a line, and appends them
to the event log FILE with source "reported": what an agent framework in
any language tells the witness about model input, model output, tool calls
it made itself, external effects and agent messages. The input shape is in
docs/formats/events.md ("Appending reported events"), for example:

  {"kind":"model_input","role":"user","content":"tidy /data","ref":"u1"}
  {"kind":"model_output","content":"I will delete /data/x","input":"u1"}

The log is verified first: a tampered log is refused (exit 3), one with a
cut-off last line too (exit 4). A log that has ended is reopened: its signed
session_end stays as a checkpoint and the new events follow it. Each event
is written as soon as its line is read; a bad line stops the append with an
error naming the line and field (exit 2), and the events before it stay.
Unless --keep-open, a new session_end is written, signed with the active key
of --keyring, else of the default keyring (docs/formats/keys.md). So that an append
cannot launder a forged log under a genuine key, signing is refused (exit 3)
when the log's last end is missing, unsigned or signed only by keys the
keyring does not hold, unless --allow-unsigned says you vouch for its lines.

It prints one line per appended event: its id, kind and ref.`,
		Example: `  printf '%s\n' '{"kind":"model_input","content":"hi"}' '{"kind":"model_output","content":"hello"}' |
    witness capture append --events rec/events.jsonl --keyring keys.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCaptureAppend(a, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Events, "events", "", "event log to append to")
	o.Keys.AddFlags(c, keyUse{Role: "keyring: verifies the log's signatures and signs the new end with its active key"})
	f.BoolVar(&o.KeepOpen, "keep-open", false, "do not write a session_end after the appended events")
	f.BoolVar(&o.AllowUns, "allow-unsigned", false, "sign the new end even over a log whose end is missing, unsigned or signed only by keys the keyring does not hold (vouching for its lines)")
	o.Redact.AddFlags(c, "")
	o.Anchor.AddFlags(c)
	f.BoolVar(&o.JSON, "json", false, "print the appended events and the log's new state as JSON (a --log anchor line goes to stderr)")
	c.MarkFlagRequired("events")
	return c
}

func runCaptureAppend(a *app, o captureAppendOptions) error {
	// the log is extended on purpose; it must not be another input (the
	// lines on stdin, the keyring, the redaction files) or a symlink
	if err := atomicfile.CheckAppend(o.Events, a.writeRules("--events", false, o.Keys.Input(a), o.Redact.RulesFile, o.Redact.KeyFile)); err != nil {
		return err
	}
	red, err := o.Redact.Load(a)
	if err != nil {
		return err
	}
	opts := derive.AppendOptions{
		InputName:     "stdin",
		KeepOpen:      o.KeepOpen,
		AllowUnsigned: o.AllowUns,
		Redactor:      red,
		Clock:         func() string { return eventlog.Timestamp(a.getenv) },
		OnEvent:       o.printAppended(a),
	}
	if err := o.appendKeys(a, &opts); err != nil {
		return err
	}
	rep, err := derive.AppendLog(o.Events, a.stdin, opts)
	if rep != nil && !o.JSON {
		fmt.Fprintf(a.stdout, "witness: appended %d reported events to %s; log %s\n", len(rep.Appended), o.Events, appendedState(rep, opts))
	}
	if err != nil || rep == nil {
		return err
	}
	if rep.Ended {
		// the new end (a checkpoint once the log is appended to again)
		anchorOut := a.stdout
		if o.JSON {
			anchorOut = a.stderr // stdout holds only the object
		}
		if err := o.Anchor.Anchor(a, o.Events, anchorOut); err != nil {
			return err
		}
	}
	if o.JSON {
		return printJSON(a, newAppendResult(o, rep, opts))
	}
	return nil
}

// appendKeys sets the keys of an append on opts: the keyring verifies the
// existing log and (unless --keep-open) its active key signs the new end.
func (o captureAppendOptions) appendKeys(a *app, opts *derive.AppendOptions) error {
	var k *keyring.Keyring
	var err error
	if o.KeepOpen {
		k, err = o.Keys.Verifier(a)
	} else {
		var s keyring.Signer
		if s, k, err = o.Keys.Signer(a); s != nil {
			opts.Signers = []eventlog.Signer{s}
		}
	}
	if err != nil {
		return err
	}
	if k != nil {
		opts.Verifier = eventlog.UnknownKeyAs(k, keyring.ErrUnknownKey, keyring.ErrRevoked)
	} else if !o.KeepOpen {
		fmt.Fprintf(a.stderr, "witness: warning: no keyring: the new session end is not signed (pass --keyring, or create the default keyring with 'witness key generate')\n")
	}
	return nil
}

// appendedState says in what state an append left the log.
func appendedState(rep *derive.AppendReport, opts derive.AppendOptions) string {
	state := "left open (--keep-open)"
	if rep.Ended {
		state = "ended, unsigned"
		if rep.Signed > 0 {
			state = "ended, signed by key " + opts.Signers[0].KeyID()
		}
	}
	if rep.Reopened {
		state = "reopened after its session_end (kept as a checkpoint), " + state
	}
	return state
}

// printAppended prints each appended event as it is written (not with
// --json: the object lists them).
func (o captureAppendOptions) printAppended(a *app) func(derive.AppendResult) {
	return func(r derive.AppendResult) {
		switch {
		case o.JSON:
		case r.Ref != "":
			fmt.Fprintf(a.stdout, "%s %s ref=%s\n", r.ID, r.Kind, r.Ref)
		default:
			fmt.Fprintf(a.stdout, "%s %s\n", r.ID, r.Kind)
		}
	}
}

// appendResult is the --json object of capture append
// (docs/formats/cli-json.md, "capture append").
type appendResult struct {
	Result   string            `json:"result"`
	V        int               `json:"v"`
	Events   string            `json:"events"`
	Appended []appendedElement `json:"appended"`
	Reopened bool              `json:"reopened"`
	Ended    bool              `json:"ended"`
	SignedBy string            `json:"signed_by"`
}

// appendedElement is one appended event.
type appendedElement struct {
	Line int64  `json:"line"`
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
}

func newAppendResult(o captureAppendOptions, rep *derive.AppendReport, opts derive.AppendOptions) appendResult {
	r := appendResult{Result: "capture append", V: cliJSONVersion, Events: o.Events, Appended: []appendedElement{},
		Reopened: rep.Reopened, Ended: rep.Ended}
	for _, e := range rep.Appended {
		r.Appended = append(r.Appended, appendedElement{Line: e.Line, ID: e.ID, Kind: string(e.Kind), Ref: e.Ref})
	}
	if rep.Ended && rep.Signed > 0 {
		r.SignedBy = opts.Signers[0].KeyID()
	}
	return r
}
