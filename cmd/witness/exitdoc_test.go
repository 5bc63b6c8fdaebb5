package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog"
)

// TestExitCodesDocPerCommand runs documented situations of
// docs/exit-codes.md, command by command: each case names the row of the
// "Evidence commands" table it shows (a piece of the row's first cell),
// and the test checks both that the row gives that code and that the
// command exits with it. A row changed in the doc or a code changed in
// the command fails here.
func TestExitCodesDocPerCommand(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testrepo.Root(t), "docs", "exit-codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	rowRE := regexp.MustCompile(`(?m)^\| (.*) \| (\d) [a-z]+[^|]*\|$`)
	rows := rowRE.FindAllStringSubmatch(string(doc), -1)
	stub, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envStub, "1")
	base := evidenceFixtures(t, stub)

	// prep edits a copy of the fixtures for one case
	cutLine := func(dir string) {
		b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
		b = bytes.TrimSuffix(b, []byte("\n"))
		os.WriteFile(filepath.Join(dir, "events.jsonl"), b[:len(b)-20], 0o644)
	}
	editLine := func(dir string) {
		b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
		b = bytes.Replace(b, []byte(`"kind":"session_end"`), []byte(`"kind":"session_ebd"`), 1)
		os.WriteFile(filepath.Join(dir, "events.jsonl"), b, 0o644)
	}
	dropEnd := func(dir string) {
		b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
		ls := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		os.WriteFile(filepath.Join(dir, "events.jsonl"), bytes.Join(ls[:len(ls)-1], nil), 0o644)
	}
	initLog := func(dir string) {
		kp := filepath.Join(dir, "logkeys.json")
		if _, err := keyring.Generate(kp, keyring.Options{}, keyring.AlgEd25519); err != nil {
			t.Fatal(err)
		}
		k, err := keyring.OpenExisting(kp, keyring.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := k.ActiveSigner()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := tlog.Init(context.Background(), filepath.Join(dir, "log"), tlog.Config{Origin: "example.test/log", Keyring: kp}, s)
		if err != nil {
			t.Fatal(err)
		}
		// the log's key pinned in a trust file (logtrust.json)
		b, err := (&keyring.TrustSet{LogKeys: []string{cfg.LogKey}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "logtrust.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		row  string // a piece of the first cell of the row
		code int
		prep func(dir string)
		args []string
	}{
		{"verify ok", "`verify --events` (or `--events` with `--graph`): every check passes", 0, nil, []string{"verify", "--events", "F/events.jsonl", "--seal", "F/seal.json"}},
		{"verify integrity only", "`verify --events FILE` without `--seal`", 0, nil, []string{"verify", "--events", "F/events.jsonl"}},
		{"verify edited line", "`verify`: an edited, reordered, inserted or deleted event line", 3, editLine, []string{"verify", "--events", "F/events.jsonl"}},
		{"verify cut line", "`verify`: no session end, a cut-off last line", 4, cutLine, []string{"verify", "--events", "F/events.jsonl"}},
		{"verify no end", "`verify`: no session end, a cut-off last line", 4, dropEnd, []string{"verify", "--events", "F/events.jsonl"}},
		{"verify wrong kind", "`verify`: a file of another kind given to `--events`", 2, nil, []string{"verify", "--events", "F/seal.json"}},
		{"graph bad line", "`graph`: a line that is not an event", 3, editLine, []string{"graph", "--events", "F/events.jsonl", "--out", "F/g.jsonld"}},
		{"graph cut line", "`graph`: a log whose last line was cut off", 4, cutLine, []string{"graph", "--events", "F/events.jsonl", "--out", "F/g.jsonld"}},
		{"replay computed", "`replay`: the counterfactual or ranking was computed", 0, nil, []string{"replay", "--graph", "F/graph.jsonld", "--rank", "--out", "F/r.json"}},
		{"replay unknown id", "`replay`: an unknown or non-removable `--remove` id", 2, nil, []string{"replay", "--graph", "F/graph.jsonld", "--remove", "e999"}},
		{"replay not a graph", "`replay`: a `--graph` file that is not a valid witness graph", 3, nil, []string{"replay", "--graph", "F/seal.json", "--remove", "e1"}},
		{"drift no report", "`drift`: no report", 2, nil, []string{"drift"}},
		{"output exists", "any command with an output: the output exists", 2, nil, []string{"graph", "--events", "F/events.jsonl", "--out", "F/graph.jsonld"}},
		{"input is a folder", "any command: an input file named on the command line", 2, nil, []string{"replay", "--graph", "F/", "--remove", "e1"}},
		{"verify log no entry", "`verify --log`: the log holds no entry for the session", 4, initLog, []string{"verify", "--events", "F/events.jsonl", "--log", "F/log", "--trust", "F/logtrust.json"}},
		{"verify log unpinned", "`verify --log` with no pinned log key", 6, initLog, []string{"verify", "--events", "F/events.jsonl", "--log", "F/log"}},
		{"log init twice", "`log init`: the folder already holds a log", 2, initLog, []string{"log", "init", "F/log", "--keyring", "F/logkeys.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var docCode string
			for _, r := range rows {
				if strings.Contains(r[1], c.row) {
					docCode = r[2]
					break
				}
			}
			if docCode == "" {
				t.Fatalf("docs/exit-codes.md has no row with %q", c.row)
			}
			if want := string(rune('0' + c.code)); docCode != want {
				t.Fatalf("docs/exit-codes.md gives %s for %q, the case expects %s", docCode, c.row, want)
			}
			dir := copyFixtures(t, base)
			if c.prep != nil {
				c.prep(dir)
			}
			args := make([]string, len(c.args))
			for i, a := range c.args {
				if strings.HasPrefix(a, "F/") {
					a = filepath.Join(dir, a[2:])
				}
				args[i] = a
			}
			env := evidenceEnv(dir)
			var stdout, stderr bytes.Buffer
			if code := run(args, newApp(strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })); code != c.code {
				t.Fatalf("%v: exit %d, docs/exit-codes.md says %d (%q)\n%s", c.args, code, c.code, c.row, stderr.String())
			}
		})
	}
}
