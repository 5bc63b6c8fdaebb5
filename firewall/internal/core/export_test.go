package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// "to an absolute, dedicated NDJSON path"
func TestAuditExportIsAnAbsolutePath(t *testing.T) {
	err := CheckAuditExport("audit.ndjson", "--out")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "absolute path") {
		t.Fatalf("relative destination: %v (exit %d), want a usage error", err, exitcode.Of(err))
	}
	if err := CheckAuditExport(filepath.Join(t.TempDir(), "audit.ndjson"), "--out"); err != nil {
		t.Fatalf("absent absolute destination refused: %v", err)
	}
}

// "The destination must be absent or a regular file with one link."
func TestAuditExportDestinationHasOneLink(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "audit.ndjson")
	if err := os.WriteFile(dst, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckAuditExport(dst, "--out"); err != nil {
		t.Fatalf("regular file with one link refused: %v", err)
	}
	if err := os.Link(dst, filepath.Join(dir, "other")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	err := CheckAuditExport(dst, "--out")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "2 hard links") {
		t.Fatalf("hard-linked destination: %v (exit %d), want a usage error naming 2 links", err, exitcode.Of(err))
	}
}

// "startup reclaims a previous staging file only when it is regular, owned
// by the daemon user, mode 0600, and has one link. Unsafe staging entries
// fail startup without being removed." witness reclaims none: each is an
// error whose hint is the remedy, and the file stays.
func TestAuditExportStaleStagingFile(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "audit.ndjson")
	staging := dst + ".partial"
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want, hint string
		make             func() error
	}{
		{"left by a killed run", "stale staging file", "rm " + staging, func() error { return os.WriteFile(staging, []byte("{}\n"), 0o600) }},
		{"wrong mode", "mode 0644", "rm " + staging, func() error {
			if err := os.WriteFile(staging, nil, 0o600); err != nil {
				return err
			}
			return os.Chmod(staging, 0o644)
		}},
		{"symlink", "is a symlink: unsafe", "remove the link itself", func() error { return os.Symlink(other, staging) }},
		{"hard-linked", "2 hard links: unsafe", "other names", func() error { return os.Link(other, staging) }},
		{"folder", "not a regular file", "move it away", func() error { return os.Mkdir(staging, 0o700) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(staging)
			if err := c.make(); err != nil {
				t.Skipf("cannot make it here: %v", err)
			}
			err := CheckAuditExport(dst, "--out")
			if exitcode.Of(err) != exitcode.Failure || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (exit %d), want exit 5 with %q", err, exitcode.Of(err), c.want)
			}
			if h := exitcode.HintOf(err); !strings.Contains(h, c.hint) {
				t.Errorf("hint %q does not contain %q", h, c.hint)
			}
			if _, err := os.Lstat(staging); err != nil {
				t.Errorf("the staging entry was removed: %v", err)
			}
		})
	}
	if b, _ := os.ReadFile(other); string(b) != "keep\n" {
		t.Errorf("a file behind an unsafe staging entry changed: %q", b)
	}
}
