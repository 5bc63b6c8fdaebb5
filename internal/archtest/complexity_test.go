package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// maxComplexity is the bound on a function's cyclomatic complexity in the
// whole module (issue 32 item 4). A function over it says why in its doc
// comment, in a sentence that names its "cyclomatic complexity" (the
// table-driven decoders of eventlog do).
const maxComplexity = 40

// complexityPending are the functions over the bound, without a reason,
// when the check came in, by package path and name; the check fails on any
// other and on one of these once it is within the bound. The list only
// shrinks.
var complexityPending = map[string]bool{}

// TestModuleComplexity: no function of the module's non-test files is
// over cyclomatic complexity 40 (counted as gocyclo counts) unless its doc
// comment says why.
func TestModuleComplexity(t *testing.T) {
	root := testrepo.Root(t)
	fset := token.NewFileSet()
	var bad []string
	seen := map[string]bool{}
	funcs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			funcs++
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
			key := filepath.ToSlash(rel) + "." + name
			c := complexity(fn.Body)
			if complexityPending[key] {
				seen[key] = c > maxComplexity
				continue
			}
			if c > maxComplexity && !strings.Contains(fn.Doc.Text(), "cyclomatic complexity") {
				pos := fset.Position(fn.Pos())
				bad = append(bad, fmt.Sprintf("%s:%d: %s: cyclomatic complexity %d (max %d): split it, or say why in its doc comment",
					filepath.ToSlash(rel)+"/"+filepath.Base(pos.Filename), pos.Line, name, c, maxComplexity))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 1000 {
		t.Fatalf("measured only %d functions under %s", funcs, root)
	}
	for key := range complexityPending {
		if !seen[key] {
			bad = append(bad, key+" is within the bound now (or gone): remove it from complexityPending")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
