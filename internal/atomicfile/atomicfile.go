package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Publish writes the file path under o's rules with what write produces,
// through a buffer: nothing appears at path unless write returns nil and
// the file is committed (see Create and Commit); on any error the staging
// file is removed and path is left as it was.
func Publish(path string, o Options, write func(io.Writer) error) (err error) {
	f, err := Create(path, o)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// SyncLive makes a recording created by CreateLive durable when it ends:
// it syncs the file's content and then its folder (so the new name
// survives a crash too). The file stays open. Platforms and file systems
// that cannot sync (a device, some network file systems) are not an error.
// Recordings are not synced line by line: "recorded" means handed to the
// kernel (docs/design/proxy.md), and the one sync happens here.
func SyncLive(f *os.File) error {
	if err := f.Sync(); err != nil && !isUnsupported(err) {
		return exitcode.New(exitcode.Failure, fmt.Errorf("sync %s: %w", f.Name(), err), "")
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil // a device or pipe written in place: no folder entry to keep
	}
	if err := syncDir(filepath.Dir(f.Name())); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("sync folder of %s: %w", f.Name(), err), "")
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !isUnsupported(err) {
		return err
	}
	return nil
}
