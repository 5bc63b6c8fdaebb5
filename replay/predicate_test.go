package replay

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
)

// graphIRIs returns the IRI-valued string constants that the graph
// package's source declares (name to value), read from its files: every
// predicate and type graph emits is one, so a constant added there is
// checked here without a list to keep in step.
func graphIRIs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "graph", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]ast.Expr{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue // iota runs
				}
				for i, n := range vs.Names {
					exprs[n.Name] = vs.Values[i]
				}
			}
		}
	}
	// eval is the string value of a constant expression: literals,
	// other constants and their sums; ok false for anything else.
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			x, ok := exprs[e.Name]
			if !ok {
				return "", false
			}
			return eval(x)
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.BinaryExpr:
			if e.Op != token.ADD {
				return "", false
			}
			a, ok1 := eval(e.X)
			b, ok2 := eval(e.Y)
			return a + b, ok1 && ok2
		}
		return "", false
	}
	out := map[string]string{}
	for name, e := range exprs {
		if v, ok := eval(e); ok && strings.HasPrefix(v, "http") && !strings.HasSuffix(v, "#") && !strings.HasSuffix(v, "/") {
			out[name] = v
		}
	}
	return out
}

// readOf is what one path kept of a node with one property.
type readOf struct {
	Deps, Maybe []string // "edge object"
	Tool        string
	Effect      effectFact
}

// TestPredicatesSamePaths feeds every IRI constant of the graph package,
// as the predicate of an external effect entity's only property (an IRI
// value and a literal), to both paths: recordBuilder.add (NewEngine's, a
// *graph.Graph) and viewBuilder.add (the stream's, EngineBuilder's). They
// must keep the same dependencies, ambiguous links, tool name and effect,
// and keep something exactly when predUse reads the predicate.
func TestPredicatesSamePaths(t *testing.T) {
	iris := graphIRIs(t)
	// the reader of graph's source agrees with the compiled constants
	for name, want := range map[string]string{"ProvUsed": graph.ProvUsed, "WEffectOp": graph.WEffectOp, "OtelToolName": graph.OtelToolName, "WPossiblyInfluencedBy": graph.WPossiblyInfluencedBy} {
		if iris[name] != want {
			t.Fatalf("graph.%s read from source as %q, compiled %q", name, iris[name], want)
		}
	}
	names := make([]string, 0, len(iris))
	for name := range iris {
		names = append(names, name)
	}
	slices.Sort(names)
	used := 0
	for _, name := range names {
		pred := iris[name]
		types := []string{graph.ProvEntity, graph.WExternalEffect}
		n := &graph.Node{ID: "urn:n", Types: types, Props: map[string][]graph.Term{
			pred: {{IRI: "urn:o"}, {Lex: "lit"}},
		}}
		var rb recordBuilder
		rb.add(n)
		r := rb.finish()[0]
		var fromGraph readOf
		for _, d := range r.Deps {
			fromGraph.Deps = append(fromGraph.Deps, d.Edge.Name()+" "+d.On)
		}
		for _, d := range r.Maybe {
			fromGraph.Maybe = append(fromGraph.Maybe, d.Edge.Name()+" "+d.On)
		}
		fromGraph.Tool = r.Tool
		if r.Effect != nil {
			fromGraph.Effect = *r.Effect
		}

		v := &graph.NodeView{ID: []byte("urn:n"), Types: types, Props: []graph.PropView{{Pred: pred, Vals: []graph.TermView{{IRI: []byte("urn:o")}, {Lex: []byte("lit")}}}}}
		vb := viewBuilder{names: newNameTable(16), tools: map[string]int32{}}
		vb.add(v)
		var fromView readOf
		object := func(k int32) string {
			if vb.names.is(k, []byte("urn:o")) {
				return "urn:o"
			}
			return fmt.Sprintf("name %d", k)
		}
		for j, k := range vb.depOn {
			fromView.Deps = append(fromView.Deps, vb.depEdge[j].Name()+" "+object(k))
		}
		for _, m := range vb.maybe {
			fromView.Maybe = append(fromView.Maybe, m.edge.Name()+" "+object(m.on))
		}
		if vb.tool[0] != 0 {
			fromView.Tool = vb.toolName[vb.tool[0]]
		}
		if len(vb.effects) == 1 {
			fromView.Effect = vb.effects[0].fact
		}

		if !reflect.DeepEqual(fromGraph, fromView) {
			t.Errorf("graph.%s (%s): the graph path keeps %+v, the stream path %+v", name, pred, fromGraph, fromView)
		}
		use, _ := predUse(pred)
		kept := !reflect.DeepEqual(fromGraph, readOf{})
		switch use {
		case useDep, useMaybe, useTool, useEffectOp, useEffectTarget:
			used++
			if !kept {
				t.Errorf("graph.%s (%s): read by replay (use %d), kept by neither path", name, pred, use)
			}
		default:
			if kept {
				t.Errorf("graph.%s (%s): not a predicate replay follows (use %d), kept %+v", name, pred, use, fromGraph)
			}
		}
	}
	if used == 0 {
		t.Fatal("no graph constant is a predicate replay reads")
	}
	t.Logf("%d graph IRI constants, %d read by replay's records", len(names), used)
}
