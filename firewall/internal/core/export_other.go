//go:build !unix

package core

import "os"

// fileLinks reports nothing where the platform has no link count.
func fileLinks(fi os.FileInfo) (links uint64, uid int, ok bool) { return 0, 0, false }
