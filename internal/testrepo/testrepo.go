// Package testrepo helps tests find the repository they run in, so that they
// can reach testdata/ (fixtures, peers, fixture servers) from any package.
package testrepo

import (
	"os"
	"path/filepath"
	"testing"
)

// Root walks up from the test's working directory (its package folder) to
// the folder that holds go.mod, and fails the test when there is none.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}
