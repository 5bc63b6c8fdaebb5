package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/pagecache"
)

// TestReplaceWithForce is the keyring's use: Force replaces the file
// atomically with the mode asked for, whatever the old file's mode was.
func TestReplaceWithForce(t *testing.T) {
	tests := []struct {
		name    string
		existed bool
		oldMode os.FileMode
		perm    os.FileMode
		data    string
		noSync  bool
	}{
		{name: "new file", perm: 0o600, data: "secret"},
		{name: "replaces a world-readable file with 0600", existed: true, oldMode: 0o644, perm: 0o600, data: "new"},
		{name: "other mode", perm: 0o644, data: "public"},
		{name: "empty content", perm: 0o600, data: ""},
		{name: "no sync", existed: true, oldMode: 0o600, perm: 0o600, data: "derived", noSync: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "f.json")
			if tt.existed {
				must(t, os.MkdirAll(filepath.Dir(path), 0o700))
				must(t, os.WriteFile(path, []byte("old content"), tt.oldMode))
			}
			if err := Write(path, []byte(tt.data), Options{Force: true, Perm: tt.perm, NoSync: tt.noSync}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.data {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tt.perm {
				t.Errorf("mode = %v, want %v", st.Mode().Perm(), tt.perm)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("folder holds %d entries, want only the target (temporary file left behind?)", len(entries))
			}
		})
	}
}

func TestPublish(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ndjson")
	o := Options{Staging: out + ".partial", Perm: 0o600}
	// a failing writer leaves nothing, not even the staging file
	boom := errors.New("boom")
	err := Publish(out, o, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Publish = %v, want the writer's error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d entries after a failed publish, want 0", len(entries))
	}
	// more than the buffer, to check every byte arrives
	want := strings.Repeat("0123456789abcdef", 40000)
	if err := Publish(out, o, func(w io.Writer) error { _, err := io.WriteString(w, want); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != want {
		t.Fatalf("content %d bytes (%v), want %d", len(got), err, len(want))
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// the rules hold: an existing file is refused without Force
	if err := Publish(out, o, func(io.Writer) error { return nil }); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("publish over an existing file: %v", err)
	}
	// DropCache (internal/pagecache): every byte arrives, over several
	// windows and a part of one; a failed writer still leaves nothing
	big := filepath.Join(dir, "big.nq")
	chunk := strings.Repeat("0123456789abcdef", 4099)
	n := 0
	err = Publish(big, Options{NoSync: true, DropCache: true}, func(w io.Writer) error {
		for n < 3*pagecache.Window+12345 {
			k, err := io.WriteString(w, chunk)
			n += k
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(big)
	if err != nil || len(got) != n || string(got[:len(chunk)]) != chunk || string(got[n-len(chunk):]) != chunk || strings.Count(string(got), chunk) != n/len(chunk) {
		t.Fatalf("DropCache: content %d bytes (%v), want %d", len(got), err, n)
	}
	err = Publish(filepath.Join(dir, "gone.nq"), Options{NoSync: true, DropCache: true}, func(w io.Writer) error {
		w.Write([]byte(strings.Repeat(chunk, 3000)))
		return boom
	})
	if _, serr := os.Stat(filepath.Join(dir, "gone.nq")); !errors.Is(err, boom) || serr == nil {
		t.Fatalf("DropCache, failed writer: %v, %v", err, serr)
	}
}

func TestSyncLive(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateLive(filepath.Join(dir, "events.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	if err := SyncLive(f); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{}\n"); err != nil {
		t.Fatalf("the file was closed by SyncLive: %v", err)
	}
	if _, err := os.Stat(os.DevNull); err == nil {
		d, err := CreateLive(os.DevNull, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := SyncLive(d); err != nil {
			t.Errorf("sync of %s: %v", os.DevNull, err)
		}
	}
}

func TestReplaceFailureLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The target is a folder: the write is refused, and no temp file stays.
	target := filepath.Join(dir, "target")
	must(t, os.Mkdir(target, 0o700))
	must(t, os.WriteFile(filepath.Join(target, "x"), nil, 0o600))
	if err := Write(target, []byte("x"), Options{Force: true, Perm: 0o600}); err == nil {
		t.Fatal("Write over a non-empty folder succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after a failed write, want 1", len(entries))
	}
}
