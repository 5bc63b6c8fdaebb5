package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/keyring"
)

// Evidence outputs (docs/design/evidence-files.md): every verb that writes a
// file builds its atomicfile.Options here, naming the files it reads, so
// that no output is ever one of its inputs and nothing is replaced without
// --force.

// addForceFlag adds --force, the only way to replace existing evidence.
func addForceFlag(c *cobra.Command, p *bool) {
	c.Flags().BoolVar(p, "force", false, "replace an existing output file (never an input of this command, never through a symlink)")
}

// outOptions returns the write rules for an output flag: force from
// --force, and the inputs (flag values and resolved paths; empty ones are
// skipped). Standard input counts as an input when it is a file.
func (a *app) outOptions(flag string, force bool, inputs ...string) atomicfile.Options {
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

// resolvedKeyring returns the keyring path a verb would read ("" when none).
func (a *app) resolvedKeyring(flag string) string {
	p, err := a.keyringPath(flag)
	if err != nil {
		return ""
	}
	return p
}

// captureKeyring returns the keyring a recording verb reads: --keyring, or
// $WITNESS_KEYRING (as captureSigners resolves it).
func (a *app) captureKeyring(flag string) string {
	if flag != "" {
		return flag
	}
	return a.getenv(keyring.EnvKeyring)
}
