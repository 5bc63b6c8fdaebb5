package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A release build names its version, commit and date with -ldflags -X, and
// both forms of the version say them.
func TestVersionLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "witness")
	pkg := "github.com/agent-trace-witness/witness/internal/version"
	ld := "-X " + pkg + ".Version=v9.8.7 -X " + pkg + ".Commit=0123456789abcdef0123 -X " + pkg + ".Date=2026-12-07T00:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, "witness v9.8.7 (go") || !strings.Contains(got, ", commit 0123456789ab, built 2026-12-07T00:00:00Z)") {
		t.Errorf("--version: %q", got)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v["version"] != "v9.8.7" || v["commit"] != "0123456789abcdef0123" || v["build_date"] != "2026-12-07T00:00:00Z" || v["modified"] != nil {
		t.Errorf("version --json: %s", out)
	}
}
