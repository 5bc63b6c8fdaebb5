package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// notMethods are literals that spell an MCP method name but mean something
// else, by file: the reason is given for each.
var notMethods = map[string]map[string]string{
	// Anthropic's stream event type "ping", not MCP's ping
	"modelapi/assemble.go": {"ping": "an Anthropic SSE event type"},
}

// The MCP method names are spelt once, in mcp/methods.go: no other non-test
// Go file of the module (testdata programs aside, which stand for foreign
// peers) holds one as a string literal.
func TestMethodNamesSpeltOnce(t *testing.T) {
	root := testrepo.Root(t)
	src, err := os.ReadFile(filepath.Join(root, "mcp", "methods.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\t\w+\s*=\s*"([^"]+)"`).FindAllSubmatch(src, -1) {
		names = append(names, regexp.QuoteMeta(string(m[1])))
	}
	if len(names) < 10 {
		t.Fatalf("mcp/methods.go: only %d method names found", len(names))
	}
	lit := regexp.MustCompile(`"(` + strings.Join(names, "|") + `)"`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		r, _ := filepath.Rel(root, path)
		r = filepath.ToSlash(r)
		if r == "mcp/methods.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := line
			if j := strings.Index(code, "//"); j >= 0 && strings.Count(code[:j], `"`)%2 == 0 {
				code = code[:j] // a comment may name a method
			}
			for _, m := range lit.FindAllStringSubmatch(code, -1) {
				if notMethods[r][m[1]] != "" {
					continue
				}
				t.Errorf("%s:%d: MCP method %q spelt as a literal: use its constant in mcp/methods.go", r, i+1, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
