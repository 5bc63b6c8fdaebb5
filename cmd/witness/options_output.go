package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
)

// outputOptions is the output flag group: --out, --force, and the files
// the command reads, none of which an output may be
// (docs/design/evidence-files.md). Commands name their inputs with Reads
// once their values are known (flag values, the keyring, a prompt file
// named by a spec); standard input counts when it is a file.
type outputOptions struct {
	Out   string // --out
	Force bool   // --force
	// stdout: "" and "-" mean standard output (graph, replay, verify,
	// key export-public); elsewhere "-" is refused.
	stdout bool
	inputs []string
}

// AddFlags declares --out with help and --force on c; stdout says that
// the output defaults to standard output (and "-" names it).
func (o *outputOptions) AddFlags(c *cobra.Command, help string, stdout bool) {
	o.stdout = stdout
	c.Flags().StringVar(&o.Out, "out", "", help)
	addForceFlag(c, &o.Force)
}

// addForceFlag adds --force, the only way to replace existing evidence.
func addForceFlag(c *cobra.Command, p *bool) {
	c.Flags().BoolVar(p, "force", false, "replace an existing output file (never an input of this command, never through a symlink)")
}

// Reads adds files the command reads (empty names are skipped).
func (o *outputOptions) Reads(paths ...string) {
	o.inputs = append(o.inputs, paths...)
}

// toStdout says the output goes to standard output.
func (o *outputOptions) toStdout() bool {
	return o.stdout && (o.Out == "" || o.Out == "-")
}

// File is the file to write: "" for standard output. Where standard output
// is not offered it is --out as given (an empty name is refused by Check).
func (o *outputOptions) File() string {
	if o.toStdout() {
		return ""
	}
	return o.Out
}

// Rules returns the write rules for --out.
func (o *outputOptions) Rules(a *app) atomicfile.Options {
	return a.writeRules("--out", o.Force, o.inputs...)
}

// Check refuses --out before the command does any work; nil when writing
// to standard output.
func (o *outputOptions) Check(a *app) error {
	if o.toStdout() {
		return nil
	}
	return atomicfile.Check(o.Out, o.Rules(a))
}

// Write writes data to --out, or to standard output.
func (o *outputOptions) Write(a *app, data []byte) error {
	if o.toStdout() {
		_, err := a.stdout.Write(data)
		return err
	}
	return atomicfile.Write(o.Out, data, o.Rules(a))
}

// Publish writes --out (or standard output) with what write produces;
// with rules the command adjusts the write rules (nil for none).
func (o *outputOptions) Publish(a *app, rules func(atomicfile.Options) atomicfile.Options, write func(io.Writer) error) error {
	if o.toStdout() {
		return write(a.stdout)
	}
	r := o.Rules(a)
	if rules != nil {
		r = rules(r)
	}
	return atomicfile.Publish(o.Out, r, write)
}

// writeRules returns the write rules for an output flag: force, and the
// inputs (empty ones are skipped). Standard input counts as an input when
// it is a file. Every output goes through here, the output group's and
// capture append's --events alike.
func (a *app) writeRules(flag string, force bool, inputs ...string) atomicfile.Options {
	if in := a.stdinFile(); in != "" {
		inputs = append(inputs, in)
	}
	return atomicfile.Options{Flag: flag, Force: force, Inputs: inputs}
}

// stdinFile returns the name under which standard input can be opened when
// it is a file (/dev/stdin for the process's own), "" otherwise.
func (a *app) stdinFile() string {
	if f, ok := a.stdin.(*os.File); ok && f != nil {
		return f.Name()
	}
	return ""
}
