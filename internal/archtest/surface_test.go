package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// exportedCeiling is the ratchet on the module's public surface: the number
// of exported names exportedNames counts may only go down. Lower it when a
// change narrows the surface; raising it needs a reason in
// docs/design/public-surface.md.
const exportedCeiling = 1032

// exportedNames counts the public surface of the module: in every package
// that another module can import (not under an internal/ directory, not a
// main package, not testdata), in its non-test .go files, the exported
//
//   - top-level functions,
//   - types (an alias counts as a type),
//   - variables and constants (each name of a group counts), and
//   - methods whose receiver is an exported type.
//
// Struct fields and interface methods are not counted: they are part of
// their type. A name declared in more than one file (files for different
// GOOS, GOARCH or build tags) counts once. It returns the count per package
// (by its path relative to the module root).
func exportedNames(root string) (map[string]int, error) {
	names := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "internal" || base == "testdata" || base == "node_modules" ||
				strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if names[dir] == nil {
			names[dir] = map[string]bool{}
		}
		for _, n := range fileExports(f) {
			names[dir][n] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for dir, set := range names {
		counts[dir] = len(set)
	}
	return counts, nil
}

// fileExports lists the exported names one file declares, methods as
// Type.Method.
func fileExports(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				out = append(out, d.Name.Name)
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				out = append(out, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// receiverName is the type name of a method's receiver: T, *T, T[P], *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// The module's public surface stays under its ceiling (issue 32: narrow
// public surfaces; docs/design/public-surface.md has the numbers).
func TestExportedNames(t *testing.T) {
	counts, err := exportedNames(testrepo.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(counts))
	total := 0
	for d, n := range counts {
		dirs = append(dirs, d)
		total += n
	}
	sort.Slice(dirs, func(i, j int) bool {
		return counts[dirs[i]] > counts[dirs[j]] || counts[dirs[i]] == counts[dirs[j]] && dirs[i] < dirs[j]
	})
	for _, d := range dirs {
		t.Logf("%5d %s", counts[d], d)
	}
	t.Logf("%5d exported names in %d public packages (ceiling %d)", total, len(dirs), exportedCeiling)
	if testing.Verbose() {
		fmt.Fprintf(os.Stdout, "exported names: %d\n", total)
	}
	if total > exportedCeiling {
		t.Errorf("the module exports %d names, over the ceiling %d: unexport what no other package uses, or put the implementation under internal/ behind a facade (docs/design/public-surface.md)", total, exportedCeiling)
	}
	if total < 20 {
		t.Errorf("counted only %d exported names: the walk is broken", total)
	}
}

// The counter counts what its comment says.
func TestFileExportsCounts(t *testing.T) {
	src := `package p
func F() {}
func f() {}
type T struct{ X int }
type t struct{}
type A = T
func (T) M() {}
func (*T) N() {}
func (T) m() {}
func (t) M() {}
func (G[P]) M() {}
type G[P any] struct{}
var V, w, W = 1, 2, 3
const (C = iota; c)
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fileExports(f)
	sort.Strings(got)
	want := "A C F G G.M T T.M T.N V W"
	if strings.Join(got, " ") != want {
		t.Errorf("fileExports = %q, want %q", strings.Join(got, " "), want)
	}
}
