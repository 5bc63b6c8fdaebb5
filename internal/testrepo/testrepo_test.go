package testrepo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootHoldsGoMod(t *testing.T) {
	root := Root(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Root() = %s has no go.mod: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testrepo")); err != nil {
		t.Fatalf("Root() = %s is not this repository: %v", root, err)
	}
}
