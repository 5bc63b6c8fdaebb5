package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/pagecache"
)

// Options say what a write may replace and how it is written. The zero
// value writes a new file (mode 0644), synced, and refuses everything else.
// The rules that no option turns off are in the package doc.
type Options struct {
	// Force allows replacing an existing regular file. It never allows
	// writing over an input or through a symlink. Evidence outputs set it
	// from --force; the keyring, which replaces itself under its own lock,
	// always sets it.
	Force bool
	// Inputs are the files the command reads. An output that is the same
	// file as one of them (same device and inode, whatever the path: a
	// symlink or a hard link counts) is refused, with or without Force.
	// Empty names and "-" are skipped.
	Inputs []string
	// Perm is the mode of the new file; 0 means 0644.
	Perm os.FileMode
	// Flag names the output flag in errors and hints ("--out" when empty).
	Flag string
	// Staging, when set, is the exact name of the staging file (created
	// exclusively, so a stale one is refused) instead of a random
	// temporary name in the destination's folder.
	Staging string
	// NoSync skips the fsync of the staged file and of its folder. Only for
	// outputs derived from evidence kept elsewhere and regenerated at will
	// (the graph, which can be gigabytes): readers still see the old file or
	// the new one, never a mix, but after a power loss or kernel crash the
	// destination may be missing, empty or old.
	NoSync bool
	// DropCache writes the staged file back to disk in windows while it
	// is written, and drops each window from the page cache once it is
	// on disk (internal/pagecache; Linux, elsewhere nothing). For
	// outputs of gigabytes (the graph): they then pass through a few
	// windows of page cache instead of filling gigabytes of it, which on
	// a virtual machine whose fresh pages each cost a fault in the host
	// is most of the time of writing them (docs/design/scale-history.md,
	// "Outputs through a few windows of page cache"). It is advice: it
	// never makes a write fail.
	DropCache bool
}

func (o Options) flag() string {
	if o.Flag == "" {
		return "--out"
	}
	return o.Flag
}

func (o Options) perm() os.FileMode {
	if o.Perm == 0 {
		return 0o644
	}
	return o.Perm
}

// destination kinds
type kind int

const (
	kindNew     kind = iota // nothing at the path
	kindReplace             // an existing regular file, Force given
	kindDevice              // a device, named pipe or socket: written in place
)

// Check applies o's rules to path without writing anything. Commands call
// it to refuse an output before they do any work (start a server, read a
// long log); Write, Create and CreateLive check again.
//
// Refusals are usage errors (exit 2) naming the flag and path, with a hint.
func Check(path string, o Options) error {
	_, err := inspect(path, o)
	return err
}

func inspect(path string, o Options) (kind, error) {
	switch path {
	case "":
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s: no file name", o.flag()), "name the file to write")
	case "-":
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s -: this command writes a file, not standard output", o.flag()), "name the file to write (or /dev/stdout)")
	}
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return kindNew, nil
	}
	if err != nil {
		return 0, exitcode.New(exitcode.Failure, fmt.Errorf("%s %s: %w", o.flag(), path, err), "")
	}
	fi, err := os.Stat(path) // follows a symlink
	if err != nil {
		// a dangling symlink
		return 0, symlinkError(path, o)
	}
	switch {
	case fi.IsDir():
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: is a folder", o.flag(), path), "name a file to write")
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: is a block device", o.flag(), path), "name a file to write")
	case !fi.Mode().IsRegular():
		// /dev/null, /dev/stdout (a symlink to the process's descriptor), a
		// pipe: written in place; renaming over it would replace it.
		return kindDevice, nil
	}
	if in, ok := sameAsInput(fi, o.Inputs); ok {
		return 0, inputError(path, in, o)
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return 0, symlinkError(path, o)
	}
	if !o.Force {
		return 0, existsError(path, o)
	}
	return kindReplace, nil
}

// CheckAppend applies the rules to a file the command extends on purpose
// (capture append adds events to an existing log): the file must not be
// reached through a symlink and must not be the same file as any of
// o.Inputs. A missing path is left for the caller to report. Force and
// Staging play no part.
func CheckAppend(path string, o Options) error {
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("%s %s: %w", o.flag(), path, err), "")
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		if fi, err := os.Stat(path); err == nil {
			if in, ok := sameAsInput(fi, o.Inputs); ok {
				return inputError(path, in, o)
			}
		}
		return symlinkError(path, o)
	}
	if in, ok := sameAsInput(lfi, o.Inputs); ok {
		return inputError(path, in, o)
	}
	return nil
}

// sameAsInput returns the first input that is the same file as fi.
func sameAsInput(fi os.FileInfo, inputs []string) (string, bool) {
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		ifi, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(fi, ifi) {
			return in, true
		}
	}
	return "", false
}

func inputError(path, input string, o Options) error {
	msg := fmt.Errorf("%s %s: refusing to write over an input: it is the same file as %s", o.flag(), path, input)
	if filepath.Clean(path) == filepath.Clean(input) {
		msg = fmt.Errorf("%s %s: refusing to write over an input of this command", o.flag(), path)
	}
	return exitcode.New(exitcode.Usage, msg, "write to a new file; an input is never replaced, even with --force")
}

func symlinkError(path string, o Options) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: is a symlink; evidence is never written through a symlink", o.flag(), path),
		"name the real file, or a new file")
}

func existsError(path string, o Options) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: exists; evidence is never overwritten", o.flag(), path),
		"add --force to replace it, or choose another "+o.flag())
}

// Write writes data to path under o's rules (see Create).
func Write(path string, data []byte, o Options) error {
	f, err := Create(path, o)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is an output being written by Create. Nothing appears at the
// destination until Commit; Abort discards it.
type File struct {
	f    *os.File
	tmp  string // staging file; "" when writing a device in place
	path string
	o    Options
	done bool
	w    io.Writer // f, or a pagecache.Writer of it (DropCache)
}

// Create opens path for writing under o's rules: a new file or (with
// Force) an existing regular file is staged in a temporary file in the same
// folder and put in place by Commit; a device, named pipe or socket is
// written in place. Parent folders are created (0755) when missing.
func Create(path string, o Options) (*File, error) {
	k, err := inspect(path, o)
	if err != nil {
		return nil, err
	}
	if k == kindDevice {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("open %s: %w", path, err), "")
		}
		return &File{f: f, w: f, path: path, o: o}, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create folder %s: %w", dir, err), "check that the folder can be created")
	}
	var f *os.File
	if o.Staging != "" {
		f, err = os.OpenFile(o.Staging, os.O_WRONLY|os.O_CREATE|os.O_EXCL|NoFollow, 0o600)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create %s: %w", o.Staging, err),
				"remove a stale "+filepath.Base(o.Staging)+" left by an interrupted run, or choose another "+o.flag())
		}
	} else {
		f, err = os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create temporary file in %s: %w", dir, err), "check that the folder exists and is writable")
		}
	}
	out := &File{f: f, w: f, tmp: f.Name(), path: path, o: o}
	if o.DropCache {
		out.w = pagecache.NewWriter(f)
	}
	// set the mode before any byte is written (CreateTemp uses 0600)
	if err := f.Chmod(o.perm()); err != nil {
		out.Abort()
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("chmod %s: %w", out.tmp, err), "")
	}
	return out, nil
}

// Write writes to the staging file (or the device).
func (f *File) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		return n, exitcode.New(exitcode.Failure, fmt.Errorf("write %s: %w", f.path, err), "")
	}
	return n, nil
}

// Name returns the destination path.
func (f *File) Name() string { return f.path }

// Abort discards what was written; it is a no-op after Commit or Abort.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	if f.tmp != "" {
		os.Remove(f.tmp)
	}
}

// Commit syncs the staging file (unless NoSync) and puts it in place:
// linked when the destination must be new (so a file that appeared
// meanwhile is never replaced), renamed over it with Force; then it syncs
// the folder (unless NoSync). The rules are checked again just before.
func (f *File) Commit() (err error) {
	if f.done {
		return errors.New("atomicfile: commit after commit or abort")
	}
	if f.tmp == "" {
		f.done = true
		if err := f.f.Close(); err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("write %s: %w", f.path, err), "")
		}
		return nil
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	if !f.o.NoSync {
		if err := f.f.Sync(); err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("sync %s: %w", f.tmp, err), "")
		}
	}
	k, err := inspect(f.path, f.o)
	if err != nil {
		return err
	}
	if k == kindDevice {
		return exitcode.New(exitcode.Failure, fmt.Errorf("write %s: became a device while it was written", f.path), "")
	}
	if err := f.f.Close(); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("close %s: %w", f.tmp, err), "")
	}
	if err := place(f.tmp, f.path, f.o, k); err != nil {
		return err
	}
	f.done = true // the staging file is gone: nothing left to abort
	if f.o.NoSync {
		return nil
	}
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("sync folder of %s: %w", f.path, err), "")
	}
	return nil
}

// place moves the finished staging file tmp to path. Without Force it
// hard-links (which fails when anything, a symlink included, is at path)
// and removes tmp; rename never follows a symlink at path either.
func place(tmp, path string, o Options, k kind) error {
	if k == kindNew && !o.Force {
		err := os.Link(tmp, path)
		if err == nil {
			os.Remove(tmp)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			if _, ierr := inspect(path, o); ierr != nil {
				return ierr
			}
			return existsError(path, o)
		}
		// no hard links on this file system: rename, having checked that
		// the destination is still free
		if _, lerr := os.Lstat(path); lerr == nil {
			return existsError(path, o)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("write %s: %w", path, err), "")
	}
	return nil
}

// CreateLive creates path for a recording written as it happens (a
// cassette, an event log): at its final name, with O_EXCL and O_NOFOLLOW,
// so a crash leaves what was recorded in place and a symlink planted at the
// path is never followed. With Force an existing regular file (never an
// input, never a symlink) is removed first. A device, named pipe or socket
// is opened in place. Parent folders are created (0755) when missing.
func CreateLive(path string, o Options) (*os.File, error) {
	k, err := inspect(path, o)
	if err != nil {
		return nil, err
	}
	if k == kindDevice {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("open %s: %w", path, err), "")
		}
		return f, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create folder %s: %w", dir, err), "check that the folder can be created")
	}
	if k == kindReplace {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("replace %s: %w", path, err), "")
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|NoFollow, o.perm())
	if errors.Is(err, fs.ErrExist) {
		// something appeared meanwhile
		if _, ierr := inspect(path, Options{Flag: o.Flag, Inputs: o.Inputs}); ierr != nil {
			return nil, ierr
		}
		return nil, existsError(path, o)
	}
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create %s: %w", path, err), "")
	}
	return f, nil
}

var _ io.Writer = (*File)(nil)
