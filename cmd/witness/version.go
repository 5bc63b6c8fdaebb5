package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/version"
)

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the witness version",
		Long: `Print the witness version, the Go version and platform, and the commit and
build date of the binary (from a release build's -ldflags, or the Go build's
VCS stamp). --json prints them as one JSON object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return printVersion(a, asJSON) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print version, commit, build_date, go and platform as JSON")
	return cmd
}

func printVersion(a *app, asJSON bool) error {
	in := version.Get()
	if !asJSON {
		_, err := fmt.Fprintln(a.stdout, in.String())
		return err
	}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}
