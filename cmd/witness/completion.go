package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

// The values of the enumerated flags that more than one verb takes: the
// verbs check a value against these lists and the shell completes from
// them (completeChoices).
var (
	keyAlgs         = []string{algEd25519, algHMAC}                    // --alg
	keyBackends     = []string{keyring.BackendFile, keyring.BackendOS} // --backend
	firewallFormats = []string{"text", "json"}                         // firewall ... --format
)

// completionShell is one shell the completion command writes a script for:
// its name, how the script is loaded, and how cobra generates it.
type completionShell struct {
	name, load string
	gen        func(root *cobra.Command, w io.Writer) error
}

// completionShells are the shells of the completion command, in the order
// of its sub-commands.
var completionShells = []completionShell{
	{"bash", "source <(witness completion bash)", func(r *cobra.Command, w io.Writer) error { return r.GenBashCompletionV2(w, true) }},
	{"zsh", "source <(witness completion zsh)", func(r *cobra.Command, w io.Writer) error { return r.GenZshCompletion(w) }},
	{"fish", "witness completion fish | source", func(r *cobra.Command, w io.Writer) error { return r.GenFishCompletion(w, true) }},
	{"powershell", "witness completion powershell | Out-String | Invoke-Expression", func(r *cobra.Command, w io.Writer) error { return r.GenPowerShellCompletionWithDesc(w) }},
}

// newCompletionCmd is cobra's shell completion command (bash, zsh, fish,
// powershell), registered explicitly so it is part of the command tree and
// of the generated CLI reference.
func newCompletionCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "completion",
		Short: "Generate the autocompletion script for the specified shell",
		Long: `Generate the autocompletion script for witness for the specified shell.
See each sub-command's help for details on how to use the generated script.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	for _, sh := range completionShells {
		c.AddCommand(newCompletionShellCmd(a, sh))
	}
	return c
}

// newCompletionShellCmd is the completion sub-command of one shell.
func newCompletionShellCmd(a *app, sh completionShell) *cobra.Command {
	long := "Generate the autocompletion script for the " + sh.name + " shell."
	if sh.name == "powershell" {
		long = "Generate the autocompletion script for powershell."
	}
	return &cobra.Command{
		Use:   sh.name,
		Short: "Generate the autocompletion script for " + sh.name,
		Long:  long + "\n\nTo load completions in your current shell session:\n\n\t" + sh.load,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sh.gen(cmd.Root(), a.stdout)
		},
	}
}

// completeChoices makes the shell complete flag's values on c with the
// choices that start with what is typed (the same list the command checks
// the value against), and nothing else: no file names.
func completeChoices(c *cobra.Command, flag string, choices ...string) {
	_ = c.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, v := range choices {
			if strings.HasPrefix(v, prefix) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
