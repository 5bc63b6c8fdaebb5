package keyring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestHelperRotateProcess is not a test: TestConcurrentRotateProcesses runs
// the test binary as a child process that rotates the keyring once.
func TestHelperRotateProcess(t *testing.T) {
	path := os.Getenv("WITNESS_TEST_ROTATE")
	if path == "" {
		t.Skip("helper process")
	}
	if _, _, err := Rotate(path, Options{}, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// 20 processes rotate the same keyring at once: under the flock every
// rotation lands, no key is lost, and there is always exactly one active key.
func TestConcurrentRotateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 20 processes")
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if _, err := Generate(path, Options{}, AlgHMAC); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRotateProcess$")
			cmd.Env = append(os.Environ(), "WITNESS_TEST_ROTATE="+path)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	k, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries := k.Entries()
	if len(entries) != n+1 {
		t.Errorf("keyring holds %d keys, want %d (a rotation was lost)", len(entries), n+1)
	}
	active := 0
	ids := map[string]bool{}
	for _, e := range entries {
		if e.Active {
			active++
		}
		ids[e.KeyID] = true
	}
	if active != 1 || len(ids) != len(entries) {
		t.Errorf("%d active keys, %d distinct ids of %d", active, len(ids), len(entries))
	}
}
