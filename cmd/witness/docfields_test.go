package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestDocsNameRealFieldsCLI runs the scripts of testdata/docs: each makes
// real files with the witness commands (a proxy in front of a replayed
// server, a scripted capture, redaction, an appended report) and checks
// with `docfields` that every member name in them is named in the format
// doc that describes them (events.md, cassette.md), so a field the code
// writes cannot go undocumented. The host input and the recorded server
// come from script/proxy_session.txtar, so both tests use the same wire.
func TestDocsNameRealFieldsCLI(t *testing.T) {
	root := testrepo.Root(t)
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", "proxy_session.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "docs"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			env.Setenv("ATW_WITNESS_TS", "2026-08-30T14:33:00+00:00")
			env.Setenv("WITNESS_KEYRING", filepath.Join(env.WorkDir, "keys.json"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			if p := os.Getenv("PATH"); p != "" {
				env.Setenv("PATH", p)
			}
			for _, f := range ar.Files {
				if f.Name == "host.jsonl" || f.Name == "recorded.jsonl" {
					if err := os.WriteFile(filepath.Join(env.WorkDir, f.Name), f.Data, 0o644); err != nil {
						return err
					}
				}
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"docfields": cmdDocFields,
		},
		RequireExplicitExec: true,
	})
}

// cmdDocFields implements the script command
//
//	docfields DOC FILE...
//
// which fails when a member name of a JSON line of FILE (at any depth, but
// not inside values kept as sent: payload, arguments, annotations, args of
// a tool) is not named in a code span of docs/formats/DOC.
func cmdDocFields(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: docfields DOC FILE...")
	}
	b, err := os.ReadFile(filepath.Join(ts.Getenv("REPO"), "docs", "formats", args[0]))
	ts.Check(err)
	named := map[string]bool{}
	text := strings.ReplaceAll(string(b), "```", "") // code fences would pair the wrong backticks
	for _, span := range regexp.MustCompile("`[^`\n]+`").FindAllString(text, -1) {
		for _, n := range regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`).FindAllString(span, -1) {
			named[n] = true
		}
	}
	asSent := map[string]bool{"payload": true, "annotations": true, "effect_detail": true}
	seen := map[string]bool{}
	for _, f := range args[1:] {
		data, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				ts.Fatalf("%s:%d: %v", f, i+1, err)
			}
			docKeys(v, asSent, seen)
		}
	}
	var missing []string
	for k := range seen {
		if !named[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		ts.Fatalf("docs/formats/%s does not name %s, which %s hold", args[0], strings.Join(missing, ", "), strings.Join(args[1:], " "))
	}
	if len(seen) < 10 {
		ts.Fatalf("only %d member names in %s: the files are too thin to check the doc", len(seen), strings.Join(args[1:], " "))
	}
	ts.Logf("%d member names, all in docs/formats/%s", len(seen), args[0])
}

// docKeys collects the member names of v at every depth, but inside
// members whose values are kept as sent.
func docKeys(v any, asSent map[string]bool, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out[k] = true
			if !asSent[k] {
				docKeys(x, asSent, out)
			}
		}
	case []any:
		for _, x := range v {
			docKeys(x, asSent, out)
		}
	}
}
