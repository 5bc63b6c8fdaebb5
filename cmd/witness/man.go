package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd is the hidden `witness man DIR`: the manual pages of the
// command tree, one per command (witness.1, witness-verify.1, ...), for
// packagers. docs/man holds them for this tree (TestManPages, make docs).
func newManCmd(a *app) *cobra.Command {
	var date string
	c := &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the manual pages of every command into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := time.Parse(time.DateOnly, date)
			if err != nil {
				return usageError(fmt.Errorf("--date %q: %w", date, err), "give the date as YYYY-MM-DD")
			}
			n, err := writeManPages(cmd.Root(), args[0], d)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.notes(), "wrote %d manual pages to %s\n", n, args[0])
			return nil
		},
	}
	c.Flags().StringVar(&date, "date", time.Now().UTC().Format(time.DateOnly), "the date on the pages (YYYY-MM-DD)")
	return c
}

// writeManPages writes manPages(root, date) into dir and returns how many.
func writeManPages(root *cobra.Command, dir string, date time.Time) (int, error) {
	pages, err := manPages(root, date)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	names := make([]string, 0, len(pages))
	for name := range pages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), pages[name], 0o644); err != nil {
			return 0, fmt.Errorf("man: %w", err)
		}
	}
	return len(names), nil
}

// manPages renders a page in section 1 for each available command of the
// tree (hidden ones and help left out), named by its path joined with
// "-" (witness-key-export-public.1), with the given date on every page.
func manPages(root *cobra.Command, date time.Time) (map[string][]byte, error) {
	root.DisableAutoGenTag = true
	out := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		var b bytes.Buffer
		h := &doc.GenManHeader{Title: strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-")), Section: "1",
			Source: "witness", Manual: "witness manual", Date: &date}
		if err := doc.GenMan(c, h, &b); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		out[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = b.Bytes()
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root)
}
