package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// TestEvidenceRules runs every writer (Write, Create+Commit, CreateLive)
// against each kind of destination and checks what was refused and what
// the files hold afterwards.
func TestEvidenceRules(t *testing.T) {
	type setup func(t *testing.T, dir string) (out string, o Options)
	existing := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "out.json")
		must(t, os.WriteFile(p, []byte("old"), 0o644))
		return p
	}
	input := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "in.json")
		must(t, os.WriteFile(p, []byte("input"), 0o644))
		return p
	}
	tests := []struct {
		name    string
		setup   setup
		refused string // substring of the error; "" when the write succeeds
		want    string // content of out after a successful write
	}{
		{name: "new file", setup: func(t *testing.T, dir string) (string, Options) {
			return filepath.Join(dir, "sub", "out.json"), Options{}
		}, want: "new"},
		{name: "existing without force", setup: func(t *testing.T, dir string) (string, Options) {
			return existing(t, dir), Options{}
		}, refused: "exists"},
		{name: "existing with force", setup: func(t *testing.T, dir string) (string, Options) {
			return existing(t, dir), Options{Force: true}
		}, want: "new"},
		{name: "output is an input by path", setup: func(t *testing.T, dir string) (string, Options) {
			in := input(t, dir)
			return in, Options{Force: true, Inputs: []string{"", "-", in}}
		}, refused: "input"},
		{name: "output is a symlink to an input", setup: func(t *testing.T, dir string) (string, Options) {
			in := input(t, dir)
			out := filepath.Join(dir, "link.json")
			must(t, os.Symlink(in, out))
			return out, Options{Force: true, Inputs: []string{in}}
		}, refused: "same file as"},
		{name: "output is a hard link to an input", setup: func(t *testing.T, dir string) (string, Options) {
			in := input(t, dir)
			out := filepath.Join(dir, "hard.json")
			must(t, os.Link(in, out))
			return out, Options{Force: true, Inputs: []string{in}}
		}, refused: "same file as"},
		{name: "input given through a symlink", setup: func(t *testing.T, dir string) (string, Options) {
			in := input(t, dir)
			link := filepath.Join(dir, "inlink.json")
			must(t, os.Symlink(in, link))
			return in, Options{Force: true, Inputs: []string{link}}
		}, refused: "same file as"},
		{name: "output is a symlink elsewhere, even with force", setup: func(t *testing.T, dir string) (string, Options) {
			target := filepath.Join(dir, "target.json")
			must(t, os.WriteFile(target, []byte("target"), 0o644))
			out := filepath.Join(dir, "link.json")
			must(t, os.Symlink(target, out))
			return out, Options{Force: true}
		}, refused: "symlink"},
		{name: "output is a dangling symlink", setup: func(t *testing.T, dir string) (string, Options) {
			out := filepath.Join(dir, "link.json")
			must(t, os.Symlink(filepath.Join(dir, "nowhere.json"), out))
			return out, Options{Force: true}
		}, refused: "symlink"},
		{name: "folder", setup: func(t *testing.T, dir string) (string, Options) {
			return dir, Options{Force: true}
		}, refused: "folder"},
		{name: "dash", setup: func(t *testing.T, dir string) (string, Options) {
			return "-", Options{}
		}, refused: "standard output"},
	}
	writers := map[string]func(path string, o Options) error{
		"Write": func(path string, o Options) error { return Write(path, []byte("new"), o) },
		"Create": func(path string, o Options) error {
			f, err := Create(path, o)
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte("new")); err != nil {
				return err
			}
			return f.Commit()
		},
		"CreateLive": func(path string, o Options) error {
			f, err := CreateLive(path, o)
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte("new")); err != nil {
				return err
			}
			return f.Close()
		},
	}
	for wname, write := range writers {
		for _, tt := range tests {
			t.Run(wname+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				out, o := tt.setup(t, dir)
				before := snapshot(t, dir)
				err := write(out, o)
				if tt.refused != "" {
					if err == nil || !strings.Contains(err.Error(), tt.refused) {
						t.Fatalf("err = %v, want a refusal mentioning %q", err, tt.refused)
					}
					if exitcode.Of(err) != exitcode.Usage {
						t.Errorf("exit code %v, want usage", exitcode.Of(err))
					}
					if after := snapshot(t, dir); after != before {
						t.Errorf("folder changed by a refused write:\nbefore %s\nafter  %s", before, after)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(out)
				if err != nil || string(got) != tt.want {
					t.Fatalf("content %q (%v), want %q", got, err, tt.want)
				}
				fi, err := os.Lstat(out)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
					t.Errorf("destination %v %v, want a regular 0644 file", fi.Mode(), err)
				}
				entries, _ := os.ReadDir(filepath.Dir(out))
				if len(entries) != 1 {
					t.Errorf("%d entries next to the output, want 1 (temporary file left?)", len(entries))
				}
			})
		}
	}
}

// snapshot lists every entry of dir with its type and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			dst, _ := os.Readlink(p)
			b.WriteString(" -> " + dst)
		}
		b.WriteString("; ")
		return nil
	})
	return b.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEvidenceDeviceInPlace(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip("no null device")
	}
	if err := Write(os.DevNull, []byte("discarded"), Options{Inputs: []string{os.DevNull}}); err != nil {
		t.Fatalf("write %s: %v", os.DevNull, err)
	}
	f, err := CreateLive(os.DevNull, Options{})
	if err != nil {
		t.Fatalf("live %s: %v", os.DevNull, err)
	}
	f.Close()
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode().IsRegular() {
		t.Fatalf("%s became a regular file", os.DevNull)
	}
}

func TestCommitRefusesAFileThatAppeared(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	f, err := Create(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	must(t, os.WriteFile(out, []byte("raced"), 0o644))
	if err := f.Commit(); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("commit over a file that appeared: %v", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "raced" {
		t.Errorf("content %q, want the file that appeared untouched", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries, want 1", len(entries))
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	f, err := Create(out, Options{Staging: out + ".partial", Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d entries after abort, want 0", len(entries))
	}
	// a stale staging file is refused
	must(t, os.WriteFile(out+".partial", nil, 0o600))
	if _, err := Create(out, Options{Staging: out + ".partial"}); err == nil {
		t.Fatal("stale staging file accepted")
	}
}

func TestCheckAppend(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "events.jsonl")
	must(t, os.WriteFile(log, []byte("{}\n"), 0o644))
	hard := filepath.Join(dir, "hard.jsonl")
	must(t, os.Link(log, hard))
	link := filepath.Join(dir, "link.jsonl")
	must(t, os.Symlink(log, link))
	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, nil, 0o644))
	for _, tc := range []struct {
		path   string
		inputs []string
		ok     bool
	}{
		{log, []string{other}, true},
		{filepath.Join(dir, "missing"), nil, true},
		{log, []string{hard}, false},
		{log, []string{link}, false},
		{link, nil, false},
	} {
		err := CheckAppend(tc.path, Options{Flag: "--events", Inputs: tc.inputs})
		if (err == nil) != tc.ok {
			t.Errorf("CheckAppend(%s, %v) = %v, want ok=%v", filepath.Base(tc.path), tc.inputs, err, tc.ok)
		}
		if err != nil && exitcode.Of(err) != exitcode.Usage {
			t.Errorf("exit code %v, want usage", exitcode.Of(err))
		}
	}
}

// TestCheckRefusesBlockDevice only checks (never writes) a block device.
func TestCheckRefusesBlockDevice(t *testing.T) {
	for _, p := range []string{"/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			continue
		}
		if err := Check(p, Options{Force: true}); err == nil || !strings.Contains(err.Error(), "block device") {
			t.Fatalf("Check(%s) = %v, want a refusal", p, err)
		}
		return
	}
	t.Skip("no block device to check")
}
