package main

import (
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/internal/version"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/progress"
)

// app carries what every command needs from the process: its streams and its
// environment. Tests build one with their own buffers and environment.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// ownProcess: the command runs as a process of its own (main), not
	// inside a test; then `witness proxy` is its process's only starter
	// of children (proxy.Options.SoleChild).
	ownProcess bool
	// quiet is --quiet: no progress line and no notes on stderr (what a
	// command did, where it wrote); errors, their hints, warnings and
	// every result on stdout stay.
	quiet bool
	// progress is the command's progress line (nil: off), made when the
	// verb starts (progress.Enabled).
	progress *progress.Reporter
}

// notes is where a command writes its notes on stderr ("witness: wrote
// FILE", the graph digest...): stderr, or nothing with --quiet.
func (a *app) notes() io.Writer {
	if a.quiet {
		return io.Discard
	}
	a.progress.Done()
	return a.stderr
}

// progressVerbs are the verbs that read long logs and show the progress
// line; the others (a proxy whose stdout is the wire...) never do.
var progressVerbs = map[string]bool{"witness graph": true, "witness verify": true, "witness report": true, "witness replay": true, "witness why": true}

// startProgress makes the progress line of a verb of progressVerbs
// (progress.Enabled); when it is on, whatever the verb writes on stdout
// first blanks it.
func (a *app) startProgress(verb string) {
	if !progressVerbs[verb] {
		return
	}
	a.progress = progress.New(a.stderr, progress.Enabled(a.stderr, a.quiet, a.getenv("WITNESS_PROGRESS")), nil)
	if a.progress != nil {
		a.stdout = blankFirst{a.progress, a.stdout}
	}
}

// blankFirst blanks the progress line before each write to w.
type blankFirst struct {
	p *progress.Reporter
	w io.Writer
}

func (b blankFirst) Write(p []byte) (int, error) {
	b.p.Done()
	return b.w.Write(p)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
}

// run executes the witness command line args and returns the exit code.
func run(args []string, a *app) int {
	root := newRootCmd(a)
	root.SetArgs(args)
	started := false
	markStarted(root, &started)
	err := root.Execute()
	a.progress.Done() // blank the progress line before anything else is printed
	if err == nil {
		return int(exitcode.OK)
	}
	var coded *exitcode.Error
	if !started && !errors.As(err, &coded) {
		// cobra refused the command line before any verb ran: unknown
		// command, missing required flag, bad flag value.
		err = usageError(err, "run 'witness --help' for the commands and 'witness COMMAND --help' for their flags")
	}
	printError(a.stderr, err)
	return int(exitcode.Of(err))
}

// printError writes err (and its hint, if any) in the witness error style.
func printError(w io.Writer, err error) {
	var silent *silentError
	if errors.As(err, &silent) {
		return
	}
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(w, "witness: error: %s\n", msg)
	if h := exitcode.HintOf(err); h != "" {
		fmt.Fprintf(w, "witness: hint: %s\n", h)
	}
}

// silentError carries an exit code for a command that has already reported
// its outcome (a verdict printed on stdout) and must not print an error line.
type silentError struct{ code exitcode.Code }

func (e *silentError) Error() string { return "exit " + e.code.Name() }

// exitWith returns an error that makes run exit with code without printing.
func exitWith(code exitcode.Code) error {
	if code == exitcode.OK {
		return nil
	}
	return exitcode.New(code, &silentError{code: code}, "")
}

// usageError marks err as a usage error with a hint.
func usageError(err error, hint string) error {
	return exitcode.New(exitcode.Usage, err, hint)
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "witness",
		Short: "External witness for autonomous AI agents: seal, capture, graph, verify, replay",
		Long: `witness is an external witness for autonomous AI agents. It seals what an
agent is allowed to do before it runs, captures what it did at the MCP
protocol boundary, turns the capture into a canonical W3C PROV causal graph,
verifies the graph against the seal, and replays counterfactuals on it.

graph, verify, report, replay and why show a progress line on stderr while
they read a log, when stderr is a terminal (WITNESS_PROGRESS=1 forces it on,
WITNESS_PROGRESS=0 off). --quiet, on every verb, turns it off and drops the
notes on stderr; errors, hints, warnings and stdout stay
(docs/design/progress.md).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "print no progress line and no notes on stderr (errors, hints, warnings and stdout stay)")
	root.PersistentPreRun = func(c *cobra.Command, _ []string) { a.startProgress(c.CommandPath()) }
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(err, fmt.Sprintf("run 'witness %s --help' for the flags it takes", strings.TrimPrefix(c.CommandPath(), "witness ")))
	})
	root.AddCommand(
		newVersionCmd(a),
		newSealCmd(a),
		newVerifyCmd(a),
		newKeyCmd(a),
		newCosignCmd(a),
		newCompletionCmd(a),
		newReplayCmd(a),
		newFirewallCmd(a),
		newProxyCmd(a),
		newCaptureCmd(a),
		newLogCmd(a),
		newServeCmd(a),
		newDriftCmd(a),
		newImportCmd(a),
		newGraphCmd(a),
		newWhyCmd(a),
		newReportCmd(a),
		newManCmd(a),
	)
	root.AddCommand(keyAliases(a)...)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// markStarted sets *started when a verb's RunE begins, so that errors cobra
// raises before that are reported as usage errors.
func markStarted(c *cobra.Command, started *bool) {
	if c.RunE != nil {
		orig := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			*started = true
			if err := refuseFolderInputs(cmd, args); err != nil {
				return err
			}
			return orig(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		markStarted(sub, started)
	}
}

// wrapArgs makes positional-argument errors usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		orig := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				return usageError(err, fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath()))
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// checkChoice refuses a flag value that is not one of choices.
func checkChoice(flag, v string, choices ...string) error {
	for _, c := range choices {
		if v == c {
			return nil
		}
	}
	return usageError(fmt.Errorf("--%s %q is not one of %v", flag, v, choices), fmt.Sprintf("use --%s %s", flag, choices[0]))
}

// inputFlags are the flags that name an input file.
var inputFlags = []string{"spec", "seal", "events", "graph", "trust", "keyring", "cassette", "scenario", "redact-rules", "redact-key", "effects", "policy", "mapping", "what-if-policy", "firewall-audit", "recorded", "activations", "host-log", "policy-read"}

// fileArgCommands are the commands whose positional arguments are input files.
var fileArgCommands = map[string]bool{
	"witness import": true, "witness drift": true,
	"witness firewall policy check": true, "witness firewall audit verify": true,
	"witness firewall audit correlate": true, "witness firewall audit activations": true,
}

// refuseFolderInputs gives one rule to every input named on the command
// line: a folder where a file is expected is a usage error (exit 2), as a
// missing file is (docs/exit-codes.md), whichever reader would have met it.
func refuseFolderInputs(cmd *cobra.Command, args []string) error {
	isDir := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
	for _, name := range inputFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed || isKeyGenerate(cmd) {
			continue
		}
		var paths []string
		switch v := f.Value.(type) {
		case pflag.SliceValue: // a repeatable input flag: each path
			paths = v.GetSlice()
		default:
			if f.Value.Type() != "string" {
				continue
			}
			paths = []string{f.Value.String()}
		}
		for _, p := range paths {
			if p != "" && isDir(p) {
				return exitcode.Input("read --"+name, &fs.PathError{Op: "open", Path: p, Err: syscall.EISDIR},
					"check the path given to --"+name+": it names a folder, not a file")
			}
		}
	}
	if fileArgCommands[cmd.CommandPath()] {
		for _, p := range args {
			if isDir(p) {
				return exitcode.Input("read input", &fs.PathError{Op: "open", Path: p, Err: syscall.EISDIR},
					"check the path "+p+": it names a folder, not a file")
			}
		}
	}
	return nil
}
