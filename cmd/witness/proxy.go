package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/proxy"
)

type proxyOptions struct {
	Output     outputOptions // --out DIR, --force
	Seal       string
	Keys       keyringOptions
	Effects    string
	Redact     redactOptions
	StdinGrace time.Duration
	TermGrace  time.Duration
	Command    []string
}

func newProxyCmd(a *app) *cobra.Command {
	var o proxyOptions
	c := &cobra.Command{
		Use:   "proxy --out DIR [--seal FILE] [--keyring PATH] [--effects FILE] -- CMD [ARGS...]",
		Short: "Run an MCP stdio server behind a transparent, recording proxy",
		Long: `proxy is what a real MCP host runs as its server command. It starts CMD
(without a shell, in its own process group) and forwards bytes unchanged in
both directions, passes the server's stderr through, closes the server's
stdin when the host closes the proxy's (and SIGTERMs the server if it has
not exited --stdin-grace later, SIGKILL --term-grace after that), forwards
SIGINT, SIGTERM and SIGHUP to the server's process group and exits with the
server's status (128+N when signal N ended it). Whatever the server started
is ended with it, even processes that left its process group.

On the side it records DIR/cassette.jsonl (every wire line, exact bytes) and
DIR/events.jsonl (tool calls and responses paired by exact JSON-RPC id,
notifications, external effects from the --effects mapping or from tools
annotated destructiveHint=true). The session end is signed with the active
key of --keyring (or of $WITNESS_KEYRING when that file exists). --redact
rules replace values by keyed hashes in both files before they are written;
the bytes forwarded are never changed. Every line is written to the
cassette before it is forwarded: a slow disk slows the wire down, and a
recording failure (disk full, write error) stops forwarding, closes the
host's stdout, ends the server, records the reason in the event log's end
(session_end.end.failure) and exits with status 5. A server that cannot
start is exit status 5; bad flags, a bad effects mapping or an existing
recording in DIR, 2.`,
		Example: `  witness proxy --out rec -- node server.js
  witness proxy --out rec --seal seal.json --keyring keys.json --effects effects.json -- ./server --flag`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = args
			return runProxy(a, o)
		},
	}
	c.Flags().SetInterspersed(false)
	o.Output.AddFlags(c, "directory to write cassette.jsonl and events.jsonl into (must not hold a recording unless --force)", false)
	c.Flags().StringVar(&o.Seal, "seal", "", "seal whose digest goes into the session header")
	o.Keys.AddFlags(c, recordingKeys)
	c.Flags().StringVar(&o.Effects, "effects", "", "effects mapping: tool name -> effect op and target path (docs/formats/effects.md)")
	o.Redact.AddFlags(c, "; values become keyed hashes in the cassette and the events, never in what is forwarded")
	c.Flags().DurationVar(&o.StdinGrace, "stdin-grace", capture.DefaultStdinGrace, "after the host closes stdin, wait this long for the server to exit before SIGTERM")
	c.Flags().DurationVar(&o.TermGrace, "term-grace", capture.DefaultTermGrace, "after SIGTERM, wait this long before SIGKILL")
	c.MarkFlagRequired("out")
	return c
}

func runProxy(a *app, o proxyOptions) error {
	signers, err := captureSigners(a, &o.Keys)
	if err != nil {
		return err
	}
	redactor, err := o.Redact.Load(a)
	if err != nil {
		return err
	}
	if o.StdinGrace <= 0 || o.TermGrace <= 0 {
		return usageError(fmt.Errorf("--stdin-grace and --term-grace must be positive"), "for example --stdin-grace 5s")
	}
	// a soft memory limit for the proxy process: with the recording's own
	// bounds it keeps the peak RSS under 256 MiB whatever the wire carries;
	// under it the collector may run less often (GC costs latency)
	o.Output.Reads(o.Seal, o.Keys.Input(a), o.Effects, o.Redact.RulesFile, o.Redact.KeyFile)
	debug.SetMemoryLimit(proxy.MemoryLimit)
	debug.SetGCPercent(proxy.GCPercent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	res, err := proxy.Run(context.Background(), proxy.Options{
		OutDir: o.Output.Out, Files: o.Output.Rules(a),
		Command: o.Command, SealPath: o.Seal, EffectsPath: o.Effects, Signers: signers, Redactor: redactor,
		Getenv: a.getenv, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Signals: sigs,
		StdinGrace: o.StdinGrace, KillGrace: o.TermGrace,
	})
	if res == nil || err != nil {
		return err // a recording failure is exit 5 whatever the server did: it was ended by the proxy
	}
	status := res.Outcome.ExitStatus
	if res.Outcome.Failure != "" {
		fmt.Fprintf(a.stderr, "witness: warning: the recording is incomplete: %s\n", res.Outcome.Failure)
	}
	if status != 0 {
		return exitWith(exitcode.Code(status))
	}
	return nil
}
