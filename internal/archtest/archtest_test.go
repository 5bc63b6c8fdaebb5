package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

const module = "github.com/agent-trace-witness/witness"

// The layers' names, as the Layers table of docs/design/architecture.md
// spells them.
const (
	plumbing  = "plumbing"  // internal/*: canonical JSON, exit codes, files, limits
	formats   = "formats"   // files and their rules
	recording = "recording" // the wire, processes, recording
	analysis  = "analysis"  // read evidence, judge it, show it
	command   = "commands"  // main packages: flags, wiring, output
	testkit   = "test kit"  // generators and helpers for tests and benchmarks
)

// layerRow is one row of the Layers table of docs/design/architecture.md
// (TestLayerTableMatchesDoc keeps the two the same).
//
// pkgs is the row's packages in order: an entry names a package and the
// packages under it (a longer entry elsewhere wins: keyring/osstore is not
// keyring's), "cmd/*" the packages under cmd. A package may import a
// package of its own layer only when that package's entry is its own or
// comes before it in the row.
//
// mayImport is the layers its (non-test) code may import, its own
// included.
type layerRow struct {
	name      string
	pkgs      []string
	mayImport []string
}

// layers is the table, in the doc's order. To add a package, or move one,
// edit its row here and in architecture.md alike.
var layers = []layerRow{
	{plumbing, []string{
		"internal/canon", "internal/exitcode", "internal/jsonlimit", "internal/jsonpath", "internal/jsontree",
		"internal/proctree", "internal/httpbound", "internal/httpcoding", "internal/offheap",
		"internal/pagecache", "internal/atomicfile", "internal/version", "internal/junitcheck", "internal/junit", "internal/progress",
		"internal/flagmode",
	}, []string{plumbing}},
	{formats, []string{"keyring", "seal", "mcp", "cassette", "eventlog", "modelapi", "drift", "derive", "tlog/bundle"},
		[]string{plumbing, formats}},
	{recording, []string{"internal/httplocal", "capture", "proxy", "serve", "httpproxy", "keyring/osstore", "tlog"},
		[]string{plumbing, formats, recording}},
	{analysis, []string{"graph", "why", "verify", "verdict", "replay", "firewall", "report"},
		[]string{plumbing, formats, analysis}},
	{command, []string{"cmd/*"}, []string{plumbing, formats, recording, analysis, testkit}},
	{testkit, []string{
		"internal/synthlog", "internal/testrepo", "internal/adversary", "internal/realpeers", "internal/agente2e",
		"internal/mysqltest", "internal/daemontest", "internal/memtest", "internal/archtest", "internal/wirediff", "internal/hostilemcp", "internal/testkeys",
	}, []string{plumbing, formats, testkit}},
}

// place is where a package sits in the table: its layer's row and its
// entry's index in that row.
type place struct {
	row   *layerRow
	entry int
}

// noExec are the layers whose packages must not start processes: neither
// they nor any package they depend on imports os/exec.
var noExec = map[string]bool{formats: true, analysis: true}

// execExempt are packages outside the module that import os/exec and that
// a no-exec layer may still depend on, each with the reason.
// (None today: keyring's OS backend, whose D-Bus client can exec
// dbus-launch, is the separate package keyring/osstore, wired in by cmd.)
var execExempt = map[string]string{}

type pkg struct {
	ImportPath string
	Name       string
	Standard   bool
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
}

func (p *pkg) inModule() bool { return p.Module != nil && p.Module.Path == module }

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

// placeOf finds a package's row and entry: main packages are commands
// wherever they are; otherwise the longest entry that is the package's
// path or a prefix of it. A package no entry covers is an error: add it
// to a row here and in architecture.md.
func placeOf(p *pkg) (place, error) {
	if p.Name == "main" {
		return place{row: rowNamed(command)}, nil
	}
	r := rel(p.ImportPath)
	best, n := place{}, -1
	for i := range layers {
		for j, e := range layers[i].pkgs {
			prefix := strings.TrimSuffix(e, "/*")
			if (r == prefix && !strings.HasSuffix(e, "/*")) || strings.HasPrefix(r, prefix+"/") {
				if len(prefix) > n {
					best, n = place{&layers[i], j}, len(prefix)
				}
			}
		}
	}
	if n < 0 {
		return place{}, fmt.Errorf("package %s is in no layer: add it to a row of internal/archtest and docs/design/architecture.md", r)
	}
	return best, nil
}

func rowNamed(name string) *layerRow {
	for i := range layers {
		if layers[i].name == name {
			return &layers[i]
		}
	}
	panic("no layer " + name)
}

// listPackages runs go list on the module and returns every package it
// reports, the module's own and their dependencies.
func listPackages(t *testing.T, root string) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// checkLayers returns one message per import that crosses the layer rule,
// and per dependency of a no-exec package that imports os/exec.
func checkLayers(pkgs map[string]*pkg) []string {
	var bad []string
	for _, p := range pkgs {
		if !p.inModule() {
			continue
		}
		at, err := placeOf(p)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		layer := at.row.name
		for _, imp := range p.Imports {
			q := pkgs[imp]
			if q == nil || !q.inModule() {
				continue
			}
			if q.Name == "main" || rel(imp) == "cmd" || strings.HasPrefix(rel(imp), "cmd/") {
				bad = append(bad, fmt.Sprintf("%s imports %s: nothing imports a command", rel(p.ImportPath), rel(imp)))
				continue
			}
			qat, err := placeOf(q)
			if err != nil {
				continue // reported for q itself
			}
			if msg := crossing(rel(p.ImportPath), at, rel(imp), qat); msg != "" {
				bad = append(bad, msg)
			}
		}
		if noExec[layer] {
			bad = append(bad, execDeps(p, layer, pkgs)...)
		}
	}
	sort.Strings(bad)
	return bad
}

// crossing says what is wrong with from (at) importing to (qat), or "".
func crossing(from string, at place, to string, qat place) string {
	if qat.row != at.row {
		if !slices.Contains(at.row.mayImport, qat.row.name) {
			return fmt.Sprintf("%s (%s) imports %s (%s): %s may import only %s",
				from, at.row.name, to, qat.row.name, at.row.name, strings.Join(at.row.mayImport, ", "))
		}
		return ""
	}
	if qat.entry > at.entry {
		return fmt.Sprintf("%s (%s) imports %s, listed after it in the %s row: within a layer a package imports only those listed before it (reorder the row here and in architecture.md)",
			from, at.row.name, to, at.row.name)
	}
	return ""
}

// execDeps reports p importing os/exec, or depending on a package that
// does (outside execExempt).
func execDeps(p *pkg, layer string, pkgs map[string]*pkg) []string {
	var bad []string
	for _, imp := range p.Imports {
		if imp == "os/exec" {
			bad = append(bad, fmt.Sprintf("%s (%s) imports os/exec: %s packages start no processes", rel(p.ImportPath), layer, layer))
		}
	}
	for _, d := range p.Deps {
		q := pkgs[d]
		if q == nil || q.Standard || execExempt[d] != "" {
			continue
		}
		for _, imp := range q.Imports {
			if imp == "os/exec" {
				bad = append(bad, fmt.Sprintf("%s (%s) depends on %s, which imports os/exec", rel(p.ImportPath), layer, d))
			}
		}
	}
	return bad
}

// The module's packages import only along the layers, and no format or
// analysis package can start a process.
func TestImportLayers(t *testing.T) {
	pkgs := listPackages(t, testrepo.Root(t))
	n := 0
	for _, p := range pkgs {
		if p.inModule() {
			n++
		}
	}
	if n < 20 {
		t.Fatalf("go list found only %d packages of the module", n)
	}
	for _, b := range checkLayers(pkgs) {
		t.Error(b)
	}
}

// architecture.md names every package of the module (main packages aside)
// in its table.
func TestArchitectureDocNamesEveryPackage(t *testing.T) {
	root := testrepo.Root(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs/design/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range listPackages(t, root) {
		if !p.inModule() || p.Name == "main" {
			continue
		}
		if !bytes.Contains(doc, []byte("| `"+rel(p.ImportPath)+"`")) {
			t.Errorf("docs/design/architecture.md: no table row for package %s", rel(p.ImportPath))
		}
	}
}

// The rule catches what it is for: synthetic packages crossing each rule
// are reported, and an allowed import is not.
func TestCheckLayersCatches(t *testing.T) {
	mod := &struct{ Path string }{module}
	mk := func(path, name string, imports ...string) *pkg {
		return &pkg{ImportPath: module + "/" + path, Name: name, Imports: imports, Module: mod}
	}
	w := func(p string) string { return module + "/" + p }
	pkgs := map[string]*pkg{}
	for _, p := range []*pkg{
		mk("capture", "capture", "os/exec"),
		mk("eventlog", "eventlog"),
		mk("graph", "graph", w("capture"), w("eventlog")), // analysis -> recording
		mk("verify", "verify", "os/exec"),                 // analysis starting processes
		mk("replay", "replay", w("graph")),                // allowed
		mk("seal", "seal", w("verify")),                   // formats -> analysis
		mk("internal/canon", "canon", w("eventlog")),      // plumbing -> formats
		mk("cmd/witness", "main", w("graph")),             // allowed
		mk("firewall", "firewall", w("cmd/witness")),      // importing a command
		mk("newpkg", "newpkg"),                            // unclassified
		{ImportPath: "os/exec", Name: "exec", Standard: true},
	} {
		pkgs[p.ImportPath] = p
	}
	pkgs[w("graph")].Deps = []string{w("capture"), w("eventlog"), "os/exec"}
	got := strings.Join(checkLayers(pkgs), "\n")
	for _, want := range []string{
		"graph (analysis) imports capture (recording)",
		"graph (analysis) depends on " + module + "/capture, which imports os/exec",
		"verify (analysis) imports os/exec",
		"seal (formats) imports verify (analysis)",
		"internal/canon (plumbing) imports eventlog (formats)",
		"firewall imports cmd/witness: nothing imports a command",
		"package newpkg is in no layer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("not reported: %s\ngot:\n%s", want, got)
		}
	}
	for _, ok := range []string{"replay (", "cmd/witness ("} {
		if strings.Contains(got, ok) {
			t.Errorf("allowed import reported: %s\ngot:\n%s", ok, got)
		}
	}
}

// The rule within a layer catches a package importing one listed after it
// in its row, and lets one import a package listed before it.
func TestCheckLayersWithinRow(t *testing.T) {
	mod := &struct{ Path string }{module}
	w := func(p string) string { return module + "/" + p }
	pkgs := map[string]*pkg{}
	for _, p := range []*pkg{
		{ImportPath: w("capture"), Name: "capture", Imports: []string{w("serve")}, Module: mod},           // listed after capture
		{ImportPath: w("serve"), Name: "serve", Imports: []string{w("capture")}, Module: mod},             // listed before serve
		{ImportPath: w("graph/sub"), Name: "sub", Imports: []string{w("graph")}, Module: mod},             // same entry
		{ImportPath: w("graph"), Name: "graph", Module: mod},                                              //
		{ImportPath: w("keyring/osstore"), Name: "osstore", Imports: []string{w("keyring")}, Module: mod}, // its own entry, recording
		{ImportPath: w("keyring"), Name: "keyring", Module: mod},
	} {
		pkgs[p.ImportPath] = p
	}
	got := strings.Join(checkLayers(pkgs), "\n")
	if want := "capture (recording) imports serve, listed after it in the recording row"; !strings.Contains(got, want) {
		t.Errorf("not reported: %s\ngot:\n%s", want, got)
	}
	for _, ok := range []string{"serve (", "graph/sub (", "keyring/osstore ("} {
		if strings.Contains(got, ok) {
			t.Errorf("allowed import reported: %s\ngot:\n%s", ok, got)
		}
	}
}

// docLayers reads the Layers table of docs/design/architecture.md: per row,
// the layer, its packages in order (the code spans of the Packages cell)
// and the layers of the May import cell (a parenthesis is a remark).
func docLayers(doc string) ([]layerRow, error) {
	const head = "| Layer | Packages | May import |"
	i := strings.Index(doc, head)
	if i < 0 {
		return nil, fmt.Errorf("no %q table", head)
	}
	span := regexp.MustCompile("`([^`]+)`")
	paren := regexp.MustCompile(`\([^)]*\)`)
	var rows []layerRow
	for _, line := range strings.Split(doc[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("row %q: want 3 cells", line)
		}
		r := layerRow{name: strings.TrimSpace(cells[0])}
		for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
			r.pkgs = append(r.pkgs, m[1])
		}
		for _, l := range strings.Split(paren.ReplaceAllString(cells[2], ""), ",") {
			r.mayImport = append(r.mayImport, strings.TrimSpace(l))
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// The Layers table of architecture.md and archtest's layers are the same:
// the same rows in the same order, each with the same packages in the same
// order and the same layers it may import.
func TestLayerTableMatchesDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testrepo.Root(t), "docs/design/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := docLayers(string(doc))
	if err != nil {
		t.Fatalf("docs/design/architecture.md: %v", err)
	}
	show := func(r layerRow) string {
		return fmt.Sprintf("| %s | %s | %s |", r.name, strings.Join(r.pkgs, ", "), strings.Join(r.mayImport, ", "))
	}
	var got, want []string
	for _, r := range rows {
		got = append(got, show(r))
	}
	for _, r := range layers {
		want = append(want, show(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/design/architecture.md's Layers table differs from internal/archtest's layers:\ndoc:\n%s\narchtest:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
