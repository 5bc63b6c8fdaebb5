//go:build unix

package core

import (
	"os"
	"syscall"
)

// fileLinks returns the hard-link count and owner of fi, and whether the
// platform reports them.
func fileLinks(fi os.FileInfo) (links uint64, uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Nlink), int(st.Uid), true
}
