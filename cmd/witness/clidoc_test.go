package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

var updateCLIDocs = flag.Bool("update", false, "rewrite docs/cli from the command tree")

// TestCLIReference keeps docs/cli, the generated command reference, in step
// with the command tree: every command has exactly its generated page and
// there is no other page. After changing commands or flags, regenerate with
//
//	make docs   (= go test ./cmd/witness -run TestCLIReference -args -update)
func TestCLIReference(t *testing.T) {
	dir := filepath.Join(testrepo.Root(t), "docs", "cli")
	want := generateCLIDocs(t)
	if *updateCLIDocs {
		old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		for _, p := range old {
			if _, ok := want[filepath.Base(p)]; !ok {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d pages to docs/cli", len(want))
		return
	}
	got := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(p)] = string(b)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/cli is stale; regenerate it with 'make docs' (go test ./cmd/witness -run TestCLIReference -args -update).\n(-generated +docs/cli):\n%s", diff)
	}
}

// generateCLIDocs renders one Markdown page per command of the tree (file
// names witness.md, witness_seal.md, witness_key_export-public.md, ...).
func generateCLIDocs(t *testing.T) map[string]string {
	t.Helper()
	root := newRootCmd(newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }))
	root.InitDefaultHelpCmd()
	out := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		out[docFileName(c)] = renderCommand(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

func docFileName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

func renderCommand(c *cobra.Command) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
	b.WriteString("<!-- generated from the command tree by TestCLIReference; do not edit (make docs) -->\n\n")
	fmt.Fprintf(&b, "%s\n\n", c.Short)
	if c.Long != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Long))
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "## Usage\n\n```\n%s\n```\n\n", c.UseLine())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags\n\n```\n%s```\n\n", fl.FlagUsages())
	}
	if fl := c.InheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags inherited from parent commands\n\n```\n%s```\n\n", fl.FlagUsages())
	}
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if !s.Hidden && s.Name() != "help" {
			subs = append(subs, s)
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	if len(subs) > 0 {
		b.WriteString("## Commands\n\n")
		for _, s := range subs {
			fmt.Fprintf(&b, "- [%s](%s): %s\n", s.CommandPath(), docFileName(s), s.Short)
		}
		b.WriteString("\n")
	}
	if c.HasParent() {
		p := c.Parent()
		fmt.Fprintf(&b, "## See also\n\n- [%s](%s): %s\n", p.CommandPath(), docFileName(p), p.Short)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// manDocDate is the date on the checked-in manual pages (docs/man); the
// pages are compared with it so that only the command tree can make them
// stale.
var manDocDate = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

// TestManPages keeps docs/man, the manual pages `witness man` writes, in
// step with the command tree (make docs regenerates them), and checks
// each is a roff page of its command: a .TH line with its title, NAME and
// SYNOPSIS sections.
func TestManPages(t *testing.T) {
	dir := filepath.Join(testrepo.Root(t), "docs", "man")
	root := newRootCmd(newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }))
	want, err := manPages(root, manDocDate)
	if err != nil {
		t.Fatal(err)
	}
	if *updateCLIDocs {
		old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := writeManPages(root, dir, manDocDate); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(p)] = string(b)
	}
	wantText := map[string]string{}
	for name, b := range want {
		wantText[name] = string(b)
		title := strings.ToUpper(strings.TrimSuffix(name, ".1"))
		if !strings.Contains(wantText[name], `.TH "`+title+`" "1" "Dec 2026" "witness" "witness manual"`) ||
			!strings.Contains(wantText[name], ".SH NAME\n") || !strings.Contains(wantText[name], ".SH SYNOPSIS\n") {
			t.Errorf("%s is not a manual page of its command:\n%.300s", name, b)
		}
	}
	if len(want) < 30 {
		t.Errorf("only %d manual pages", len(want))
	}
	if diff := cmp.Diff(wantText, got); diff != "" {
		t.Errorf("docs/man is stale; regenerate it with 'make docs'.\n(-generated +docs/man):\n%s", diff)
	}
}
