package exitcode

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocMatchesConstants keeps docs/exit-codes.md and the constants in
// step: the doc's main table lists every code, in order, with its number,
// name and constant, and nothing else.
func TestDocMatchesConstants(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "exit-codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| ([a-z]+) \\| `exitcode\\.([A-Za-z]+)` \\| (.+) \\|$")
	type entry struct {
		Code  int
		Name  string
		Const string
	}
	var doc []entry
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		if m[4] == "" {
			t.Errorf("code %s has no meaning in the doc", m[1])
		}
		doc = append(doc, entry{n, m[2], m[3]})
	}
	constNames := map[Code]string{OK: "OK", Violation: "Violation", Usage: "Usage", Tampered: "Tampered", Incomplete: "Incomplete", Failure: "Failure", Unauthenticated: "Unauthenticated"}
	var code []entry
	for _, c := range All {
		name, ok := constNames[c]
		if !ok {
			t.Errorf("code %d (%s) is missing from this test's constant names: add it here and to docs/exit-codes.md", int(c), c.Name())
		}
		code = append(code, entry{int(c), c.Name(), name})
	}
	if len(constNames) != len(All) {
		t.Errorf("All lists %d codes, the test knows %d", len(All), len(constNames))
	}
	if diff := cmp.Diff(code, doc); diff != "" {
		t.Errorf("docs/exit-codes.md and internal/exitcode differ (-constants +doc):\n%s", diff)
	}
}

func TestCodesAreDistinct(t *testing.T) {
	seen := map[Code]bool{}
	names := map[string]bool{}
	for _, c := range All {
		if seen[c] || names[c.Name()] {
			t.Errorf("code %d (%s) is not unique", int(c), c.Name())
		}
		seen[c], names[c.Name()] = true, true
	}
}
