//go:build unix

package keyring

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

func isSymlink(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()&fs.ModeSymlink != 0
}

// A keyring reached through a symlink is locked and written at its real
// path: 20 processes rotate it at once, half through a symlink to the file
// and half through a symlinked folder. Every rotation lands in the real
// file (so they all took the same lock), the symlinks stay symlinks, and no
// lock file appears beside them.
func TestConcurrentRotateThroughSymlinks(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 20 processes")
	}
	dir := t.TempDir()
	realDir := filepath.Join(dir, "real")
	real := filepath.Join(realDir, "keys.json")
	if _, err := Generate(real, Options{}, AlgHMAC); err != nil {
		t.Fatal(err)
	}
	fileLink := filepath.Join(dir, "link.json")
	dirLink := filepath.Join(dir, "linkdir")
	if err := os.Symlink(filepath.Join("real", "keys.json"), fileLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realDir, dirLink); err != nil {
		t.Fatal(err)
	}
	paths := []string{fileLink, filepath.Join(dirLink, "keys.json")}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRotateProcess$")
			cmd.Env = append(os.Environ(), "WITNESS_TEST_ROTATE="+path)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%v: %s", err, out)
			}
		}(paths[i%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !isSymlink(t, fileLink) || !isSymlink(t, dirLink) {
		t.Fatal("a rotation replaced a symlink by a regular file or folder")
	}
	k, err := Open(real, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries := k.Entries()
	active := 0
	for _, e := range entries {
		if e.Active {
			active++
		}
	}
	if len(entries) != n+1 || active != 1 {
		t.Errorf("real keyring holds %d keys (%d active), want %d (1 active): a rotation was lost or written elsewhere", len(entries), active, n+1)
	}
	if _, err := os.Stat(fileLink + ".lock"); err == nil {
		t.Error("a lock file was taken beside the symlink, not at the real path")
	}
	if _, err := os.Stat(real + ".lock"); err != nil {
		t.Errorf("no lock at the real path: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("real keyring mode: %v %v", fi, err)
	}
}

// keygen through a dangling symlink creates the keyring where the link
// points and keeps the link.
func TestGenerateThroughDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "keys.json")
	target := filepath.Join(dir, "store", "witness-keys.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	e, err := Generate(link, Options{}, AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	if !isSymlink(t, link) {
		t.Fatal("keygen replaced the symlink by a regular file")
	}
	k, err := OpenExisting(target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := k.Active(); err != nil || a.KeyID != e.KeyID {
		t.Errorf("target keyring: %v %v", a, err)
	}
	if _, _, err := Rotate(link, Options{}, ""); err != nil {
		t.Fatal(err)
	}
	if !isSymlink(t, link) || len(reopenEntries(t, target)) != 2 {
		t.Error("rotation through the link did not land in the target")
	}
}

func reopenEntries(t *testing.T, path string) []Entry {
	t.Helper()
	k, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k.Entries()
}
