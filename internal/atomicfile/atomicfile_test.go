package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name    string
		existed bool
		oldMode os.FileMode
		perm    os.FileMode
		data    string
	}{
		{name: "new file", perm: 0o600, data: "secret"},
		{name: "replaces a world-readable file with 0600", existed: true, oldMode: 0o644, perm: 0o600, data: "new"},
		{name: "other mode", perm: 0o644, data: "public"},
		{name: "empty content", perm: 0o600, data: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "f.json")
			if tt.existed {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("old content"), tt.oldMode); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte(tt.data), tt.perm); err != nil {
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

func TestWriteFileFailureLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The target is a folder: rename must fail, and the temp file must go.
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile over a non-empty folder succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after a failed write, want 1", len(entries))
	}
}

func TestWriteFileDeviceInPlace(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip("no null device")
	}
	if err := WriteFile(os.DevNull, []byte("discarded"), 0o600); err != nil {
		t.Fatalf("write to %s: %v", os.DevNull, err)
	}
	fi, err := os.Stat(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().IsRegular() {
		t.Fatalf("%s became a regular file", os.DevNull)
	}
	if err := WriteFile(t.TempDir(), []byte("x"), 0o600); err == nil {
		t.Fatal("writing over a folder succeeded")
	}
}
