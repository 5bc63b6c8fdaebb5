//go:build !linux

package atomicfile

import "os"

// cacheDropper does nothing where the kernel gives no writeback advice
// (Options.DropCache is Linux only).
type cacheDropper struct{}

func newCacheDropper(*os.File) *cacheDropper { return &cacheDropper{} }

func (*cacheDropper) wrote(int) {}
