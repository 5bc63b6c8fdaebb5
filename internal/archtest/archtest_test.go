package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

const module = "github.com/agent-trace-witness/witness"

// The layers, bottom to top (docs/design/architecture.md).
const (
	plumbing  = "plumbing"  // internal/*: canonical JSON, exit codes, files, limits
	testkit   = "testkit"   // generators and helpers for tests and benchmarks
	formats   = "formats"   // keyring, seal, mcp, cassette, eventlog, modelapi, drift, derive, tlog/bundle: files and their rules
	recording = "recording" // capture, proxy, httpproxy, serve, tlog: the wire, processes, recording
	analysis  = "analysis"  // graph, why, verify, replay, firewall, report: read evidence, judge it, show it
	command   = "cmd"       // main packages: flags, wiring, output
)

// layerOf classifies a package by the longest prefix of its path within the
// module; main packages are commands wherever they are. A package no rule
// covers is an error: classify it here and in architecture.md.
var prefixes = []struct{ prefix, layer string }{
	{"internal/synthlog", testkit},
	{"internal/testrepo", testkit},
	{"internal/adversary", testkit},
	{"internal/realpeers", testkit},
	{"internal/mysqltest", testkit},
	{"internal/daemontest", testkit},
	{"internal/memtest", testkit},
	{"internal/agente2e", testkit},
	{"internal/archtest", testkit},
	{"internal/wirediff", testkit},
	{"internal", plumbing},
	{"keyring/osstore", recording},
	{"keyring", formats},
	{"seal", formats},
	{"mcp", formats},
	{"cassette", formats},
	{"eventlog", formats},
	{"modelapi", formats},
	{"drift", formats},
	{"derive", formats},
	{"tlog/bundle", formats},
	{"capture", recording},
	{"proxy", recording},
	{"httpproxy", recording},
	{"serve", recording},
	{"tlog", recording},
	{"graph", analysis},
	{"why", analysis},
	{"verify", analysis},
	{"replay", analysis},
	{"firewall", analysis},
	{"verdict", analysis},
	{"report", analysis},
	{"cmd", command},
}

// mayImport says which layers a layer's (non-test) code may import.
var mayImport = map[string][]string{
	plumbing:  {plumbing},
	testkit:   {plumbing, formats, testkit},
	formats:   {plumbing, formats},
	recording: {plumbing, formats, recording},
	analysis:  {plumbing, formats, analysis},
	command:   {plumbing, testkit, formats, recording, analysis},
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

func layerOf(p *pkg) (string, error) {
	if p.Name == "main" {
		return command, nil
	}
	r := rel(p.ImportPath)
	for _, x := range prefixes {
		if r == x.prefix || strings.HasPrefix(r, x.prefix+"/") {
			return x.layer, nil
		}
	}
	return "", fmt.Errorf("package %s is in no layer: add it to internal/archtest and docs/design/architecture.md", r)
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
		layer, err := layerOf(p)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		for _, imp := range p.Imports {
			q := pkgs[imp]
			if q == nil || !q.inModule() {
				continue
			}
			if q.Name == "main" || rel(imp) == "cmd" || strings.HasPrefix(rel(imp), "cmd/") {
				bad = append(bad, fmt.Sprintf("%s imports %s: nothing imports a command", rel(p.ImportPath), rel(imp)))
				continue
			}
			ql, err := layerOf(q)
			if err != nil {
				continue // reported for q itself
			}
			if !allowed(layer, ql) {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): %s may import only %s",
					rel(p.ImportPath), layer, rel(imp), ql, layer, strings.Join(mayImport[layer], ", ")))
			}
		}
		if noExec[layer] {
			bad = append(bad, execDeps(p, layer, pkgs)...)
		}
	}
	sort.Strings(bad)
	return bad
}

func allowed(from, to string) bool {
	for _, l := range mayImport[from] {
		if l == to {
			return true
		}
	}
	return false
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
