package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

var (
	fixtureMu    sync.Mutex
	fixtureBuilt = map[string]string{} // name -> binary, built once per test run
	fixtureDir   string
)

// cmdBuildFixture implements the script command
//
//	build-fixture NAME
//
// which builds testdata/servers/NAME (the Go SDK fixture server "gosdk",
// the "echo" server), or testdata/modelserver for "modelserver" (the
// scripted model API), once per test run, with the test's own Go
// environment (its module and build caches: a script's $HOME is empty),
// and copies the binary to $WORK/NAME.
func cmdBuildFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: build-fixture NAME")
	}
	name := args[0]
	fixtureMu.Lock()
	bin, ok := fixtureBuilt[name]
	if !ok {
		if fixtureDir == "" {
			d, err := os.MkdirTemp("", "witness-script-fixtures-")
			if err != nil {
				fixtureMu.Unlock()
				ts.Fatalf("build-fixture: %v", err)
			}
			fixtureDir = d
		}
		bin = filepath.Join(fixtureDir, name)
		pkg := "./testdata/servers/" + name
		if name == "modelserver" {
			pkg = "./testdata/modelserver"
		}
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = ts.Getenv("REPO")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixtureMu.Unlock()
			ts.Fatalf("build-fixture %s: %v\n%s", name, err, out)
		}
		fixtureBuilt[name] = bin
	}
	fixtureMu.Unlock()
	data, err := os.ReadFile(bin)
	if err != nil {
		ts.Fatalf("build-fixture: %v", err)
	}
	if err := os.WriteFile(ts.MkAbs(name), data, 0o755); err != nil {
		ts.Fatalf("build-fixture: %v", err)
	}
}
