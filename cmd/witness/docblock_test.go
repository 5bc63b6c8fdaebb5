package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// A doc block is a fenced block of README.md or docs/guide/*.md. One that
// shows output (isOutput) carries a marker on the line before its
// opening fence:
//
//	<!-- output: NAME -->
//	<!-- output: NAME, random ids -->
//
// and a script in testdata/script runs the real commands and checks what
// they print against it with `docblock FILE NAME GOT` (CONTRIBUTING.md,
// "Output in the docs"). "random ids" says the block's key ids, 64-digit
// hex values (seal refs, digests), session ids, transparency log keys and
// local ports come from a random key, session or port and differ from run
// to run: they are masked on both sides.
var docMarker = regexp.MustCompile(`^<!-- output: ([a-z0-9][a-z0-9-]*)(, random ids)? -->$`)

type docBlock struct {
	file   string // relative to the repository root
	line   int    // of the opening fence, 1-based
	name   string // the marker's name, "" when unmarked
	random bool   // the marker says "random ids"
	body   []string
}

// isOutput says whether a block shows what commands printed: its first
// line is a command (`$ ...`), and some line is neither a command, nor the
// continuation of one (after a line ending in `\`), nor blank.
func (b docBlock) isOutput() bool {
	if len(b.body) == 0 || !strings.HasPrefix(b.body[0], "$ ") {
		return false
	}
	cont := false
	for _, l := range b.body {
		isCmd := strings.HasPrefix(l, "$ ") || cont
		cont = isCmd && strings.HasSuffix(l, `\`)
		if !isCmd && strings.TrimSpace(l) != "" {
			return true
		}
	}
	return false
}

// docBlocks returns the fenced blocks of a Markdown text.
func docBlocks(file, text string) []docBlock {
	lines := strings.Split(text, "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		b := docBlock{file: file, line: i + 1}
		if i > 0 {
			if m := docMarker.FindStringSubmatch(lines[i-1]); m != nil {
				b.name, b.random = m[1], m[2] != ""
			}
		}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			b.body = append(b.body, lines[i])
		}
		out = append(out, b)
	}
	return out
}

// docFiles are the files whose output blocks must be checked.
func docFiles(root string) ([]string, error) {
	guides, err := filepath.Glob(filepath.Join(root, "docs", "guide", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, g := range guides {
		r, err := filepath.Rel(root, g)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(r))
	}
	return files, nil
}

// updateDocs makes docblock write what the commands printed into a block
// that differs (go test ./cmd/witness -run 'TestScript/doc_' -update-docs):
// a "..." of the block is lost then, so put back what the doc leaves out.
var updateDocs = flag.Bool("update-docs", false, "docblock: rewrite doc blocks that differ with the real output")

var updateDocsMu sync.Mutex

// rewriteBlock replaces the body of the block named name in path by got.
func rewriteBlock(path, name, got string) error {
	updateDocsMu.Lock()
	defer updateDocsMu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	for _, b := range docBlocks(path, string(data)) {
		if b.name != name {
			continue
		}
		start, end := b.line, b.line+len(b.body) // body lines [start, end)
		out := append(append(append([]string{}, lines[:start]...), strings.Split(got, "\n")...), lines[end:]...)
		return os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
	}
	return fmt.Errorf("no block %s", name)
}

var randomIDs = []*regexp.Regexp{
	regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`),   // key ids
	regexp.MustCompile(`ed25519-[0-9a-f]{16}`),                      // Ed25519 key ids
	regexp.MustCompile(`public key \(base64\): [A-Za-z0-9+/=]{44}`), // and their public keys
	regexp.MustCompile(`\b[0-9a-f]{64}\b`),                          // seal refs, digests
	regexp.MustCompile(`urn:witness:[0-9a-f]{32}(;[0-9a-f]{16})?`),  // session ids
	regexp.MustCompile(`\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}`),          // transparency log keys (NAME+HASH+KEY)
	regexp.MustCompile(`127\.0\.0\.1:[0-9]+`),                       // ports the system chose (--listen 127.0.0.1:0)
}

func maskRandom(s string) string {
	for _, re := range randomIDs {
		s = re.ReplaceAllString(s, "<random>")
	}
	return s
}

// matchLines says whether got is want, where a want line that is "..."
// (spaces around it aside) stands for any lines, none included.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && matchLines(want[1:], got[1:])
}

// cmdDocBlock implements the script command
//
//	docblock FILE NAME GOT
//
// which fails unless GOT (a file of $WORK) is the block of $REPO/FILE
// marked <!-- output: NAME -->, line for line: a block line "..." stands
// for any lines, and a block marked "random ids" has its key ids, hex
// digests and session ids masked on both sides.
func cmdDocBlock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: docblock FILE NAME GOT")
	}
	text, err := os.ReadFile(filepath.Join(ts.Getenv("REPO"), args[0]))
	ts.Check(err)
	var blk *docBlock
	for _, b := range docBlocks(args[0], string(text)) {
		if b.name == args[1] {
			blk = &b
			break
		}
	}
	if blk == nil {
		ts.Fatalf("docblock: %s has no block marked <!-- output: %s -->", args[0], args[1])
	}
	gotData, err := os.ReadFile(ts.MkAbs(args[2]))
	ts.Check(err)
	want := strings.Join(blk.body, "\n")
	got := strings.TrimSuffix(string(gotData), "\n")
	raw := got
	if blk.random {
		want, got = maskRandom(want), maskRandom(got)
	}
	if !matchLines(strings.Split(want, "\n"), strings.Split(got, "\n")) {
		ts.Logf("want (%s:%d):\n%s\n\ngot:\n%s", args[0], blk.line, want, got)
		if *updateDocs {
			ts.Check(rewriteBlock(filepath.Join(ts.Getenv("REPO"), args[0]), args[1], raw))
			ts.Logf("rewrote %s's block %s", args[0], args[1])
			return
		}
		ts.Fatalf("docblock: %s's block %s is not what the commands print (regenerate it from the real output)", args[0], args[1])
	}
}

// docsPending are the guides whose output blocks are not all marked and
// checked yet: a ratchet, each must still have an unmarked block, so the
// list can only shrink. Empty since issue 32 item 6: README.md and every
// guide are held in full; a new guide starts held too.
var docsPending = map[string]bool{}

// Every block of README.md and docs/guide/*.md that shows output is
// marked, each name once, and a script checks it with docblock.
func TestDocBlocksMarked(t *testing.T) {
	root := testrepo.Root(t)
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	used := scriptDocblocks(t, root)
	seen := map[string]string{}
	pendingLeft := map[string]bool{}
	defer func() {
		for f := range docsPending {
			if !pendingLeft[f] {
				t.Errorf("%s has no unmarked output block left: take it off docsPending", f)
			}
		}
	}()
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range docBlocks(f, string(text)) {
			at := fmt.Sprintf("%s:%d", f, b.line)
			switch {
			case b.name == "" && b.isOutput() && docsPending[f]:
				pendingLeft[f] = true
			case b.name == "" && b.isOutput():
				t.Errorf("%s: a block of output without <!-- output: NAME --> before it (CONTRIBUTING.md, \"Output in the docs\")", at)
			case b.name == "":
			case seen[b.name] != "":
				t.Errorf("%s: output name %s is also used at %s", at, b.name, seen[b.name])
			case !used[f+" "+b.name]:
				t.Errorf("%s: no script in cmd/witness/testdata/script runs `docblock %s %s ...`", at, f, b.name)
			}
			if b.name != "" {
				seen[b.name] = at
			}
		}
	}
}

// scriptDocblocks returns "FILE NAME" for each docblock command of the
// scripts.
func scriptDocblocks(t *testing.T, root string) map[string]bool {
	t.Helper()
	scripts, err := filepath.Glob(filepath.Join(root, "cmd", "witness", "testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`(?m)^(?:\[[^\]]*\] )*docblock (\S+) (\S+) \S+$`)
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			used[m[1]+" "+m[2]] = true
		}
	}
	return used
}

// The README is a front door: under 350 lines.
func TestReadmeLength(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testrepo.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n >= 350 {
		t.Errorf("README.md has %d lines, want under 350: move detail into docs/guide", n)
	}
}

// The rule finds what it is for: a transcript with output, not a list
// of commands or a file's text.
func TestDocBlockRule(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"$ witness keygen\ngenerated key_id=x", true},
		{"$ a \\\n    --flag\nout", true},
		{"$ a \\\n    --flag\n$ b", false},
		{"$ make build\n\n$ make test", false},
		{`{"a": 1}`, false},
		{"make test   # comment", false},
	} {
		if got := (docBlock{body: strings.Split(c.body, "\n")}).isOutput(); got != c.want {
			t.Errorf("isOutput(%q) = %v, want %v", c.body, got, c.want)
		}
	}
	if !matchLines([]string{"a", "  ...", "d"}, []string{"a", "b", "c", "d"}) || matchLines([]string{"a", "...", "d"}, []string{"a", "b"}) {
		t.Error("matchLines: ... does not stand for any lines")
	}
}

// scriptCondition is the scripts' own condition:
//
//	[peers]  the pinned npm peers are installed (make peers); under CI
//	         their absence is an error, not a skip
func scriptCondition(cond string) (bool, error) {
	if cond != "peers" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	root, err := os.Getwd() // cmd/witness, where go test runs
	if err != nil {
		return false, err
	}
	index := filepath.Join(root, "..", "..", "testdata", "peers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(index); err != nil {
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("the npm peers are not installed (make peers): %w", err)
		}
		return false, nil
	}
	return true, nil
}
