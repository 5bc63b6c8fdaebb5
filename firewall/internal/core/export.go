package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// CheckAuditExport applies the seed's publication rules for an operator
// audit snapshot ("Operator audit snapshot") to the destination path,
// before any work is done, beyond the evidence rules atomicfile applies to
// every output:
//
//   - the destination must be absolute: a relative name means a different
//     file from another working folder (usage error);
//   - the destination must be absent or a regular file with one link: a
//     hard-linked target would change what another name shows when the
//     snapshot is replaced (usage error, --force cannot help);
//   - the staging file "<path>.partial" must be absent: a stale one left by
//     a killed run is never removed for the user; the error says what it
//     is and the hint how to remove it (failure: the publication cannot be
//     carried out until it is gone).
//
// flag names the option in errors ("--out" when empty).
func CheckAuditExport(path, flag string) error {
	if flag == "" {
		flag = "--out"
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		hint := "give an absolute path, e.g. " + flag + " $PWD/" + path
		if err == nil {
			hint = "give an absolute path, e.g. " + flag + " " + abs
		}
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: an audit snapshot is published only to an absolute path", flag, path), hint)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if links, _, ok := fileLinks(fi); ok && links > 1 {
			return exitcode.New(exitcode.Usage, fmt.Errorf("%s %s: the destination has %d hard links; replacing it would leave the old snapshot under the other names", flag, path, links),
				"publish to a file with one link (even --force cannot help): remove the other links or choose another "+flag)
		}
	}
	return checkStaging(path+".partial", flag)
}

// checkStaging refuses an existing staging file, saying what it is: a
// regular file of ours with mode 0600 and one link is what a killed run
// leaves; anything else (a symlink, a hard-linked or foreign file, a
// folder) was not made by a publication and is reported as unsafe.
func checkStaging(staging, flag string) error {
	fi, err := os.Lstat(staging)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("%s: staging file %s: %w", flag, staging, err), "")
	}
	links, uid, known := fileLinks(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return exitcode.New(exitcode.Failure, fmt.Errorf("staging file %s is a symlink: unsafe, not left by a publication (it is never followed or removed)", staging),
			"find out who made it, then remove the link itself (rm "+staging+") or choose another "+flag)
	case !fi.Mode().IsRegular():
		return exitcode.New(exitcode.Failure, fmt.Errorf("staging file %s is not a regular file (%s): unsafe, not left by a publication", staging, fi.Mode().Type()),
			"move it away or choose another "+flag)
	case known && links > 1:
		return exitcode.New(exitcode.Failure, fmt.Errorf("staging file %s has %d hard links: unsafe, not left by a publication (it is never removed)", staging, links),
			"find the other names of this file, then remove it (rm "+staging+") or choose another "+flag)
	case known && uid != os.Getuid():
		return exitcode.New(exitcode.Failure, fmt.Errorf("staging file %s belongs to user %d, not to us: unsafe, not left by our publication", staging, uid),
			"ask its owner, or choose another "+flag)
	case fi.Mode().Perm() != 0o600:
		return exitcode.New(exitcode.Failure, fmt.Errorf("staging file %s has mode %04o, not 0600: not left by a publication", staging, fi.Mode().Perm()),
			"inspect it, then remove it (rm "+staging+") or choose another "+flag)
	}
	return exitcode.New(exitcode.Failure, fmt.Errorf("stale staging file %s (%d bytes): an earlier publication to this path was interrupted, or another is running now", staging, fi.Size()),
		"make sure no other witness writes this snapshot, then remove it (rm "+staging+") and run again; it holds no complete snapshot")
}
