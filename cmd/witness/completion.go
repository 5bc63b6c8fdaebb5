package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

// The values of the enumerated flags that more than one verb takes: the
// verbs check a value against these lists and the shell completes from
// them (completeChoices).
var (
	keyAlgs         = []string{keyring.AlgHMAC, keyring.AlgEd25519}    // --alg
	keyBackends     = []string{keyring.BackendFile, keyring.BackendOS} // --backend
	firewallFormats = []string{"text", "json"}                         // firewall ... --format
)

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
	c.AddCommand(
		&cobra.Command{
			Use:   "bash",
			Short: "Generate the autocompletion script for bash",
			Long: `Generate the autocompletion script for the bash shell.

To load completions in your current shell session:

	source <(witness completion bash)`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return cmd.Root().GenBashCompletionV2(a.stdout, true)
			},
		},
		&cobra.Command{
			Use:   "zsh",
			Short: "Generate the autocompletion script for zsh",
			Long: `Generate the autocompletion script for the zsh shell.

To load completions in your current shell session:

	source <(witness completion zsh)`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return cmd.Root().GenZshCompletion(a.stdout)
			},
		},
		&cobra.Command{
			Use:   "fish",
			Short: "Generate the autocompletion script for fish",
			Long: `Generate the autocompletion script for the fish shell.

To load completions in your current shell session:

	witness completion fish | source`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return cmd.Root().GenFishCompletion(a.stdout, true)
			},
		},
		&cobra.Command{
			Use:   "powershell",
			Short: "Generate the autocompletion script for powershell",
			Long: `Generate the autocompletion script for powershell.

To load completions in your current shell session:

	witness completion powershell | Out-String | Invoke-Expression`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return cmd.Root().GenPowerShellCompletionWithDesc(a.stdout)
			},
		},
	)
	return c
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
