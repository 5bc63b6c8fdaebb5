package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agent-trace-witness/witness/internal/flagmode"
)

// modeFlags are the flags of a verb that runs in modes (proxy, serve):
// each flag that belongs to some modes only is declared once with them
// (only), and check refuses one given in another mode with one message
// and hint (internal/flagmode).
type modeFlags struct {
	set *flagmode.Set
	fs  *pflag.FlagSet
}

// newModeFlags declares the modes of c, whose help then lists its flags
// by mode.
func newModeFlags(c *cobra.Command, modes ...flagmode.Mode) modeFlags {
	groupFlagHelp(c)
	return modeFlags{flagmode.New(modes...), c.Flags()}
}

// only declares that the flags named belong to modes only.
func (m modeFlags) only(modes []string, flags ...string) {
	for _, f := range flags {
		m.set.Only(m.fs, f, modes...)
	}
}

// check refuses a flag given that does not belong to mode (exit 2).
func (m modeFlags) check(mode string) error {
	if e := m.set.Check(m.fs, mode); e != nil {
		return usageError(e, e.Hint())
	}
	return nil
}

// groupFlagHelp makes the help of c list its flags by mode
// (flagmode.Usage) where cobra's lists them in one block.
func groupFlagHelp(c *cobra.Command) {
	cobra.AddTemplateFunc("flagmodeUsage", flagmode.Usage)
	const local = "Flags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}"
	c.SetUsageTemplate(strings.Replace(c.UsageTemplate(), local, "{{flagmodeUsage .LocalFlags | trimTrailingWhitespaces}}", 1))
}
