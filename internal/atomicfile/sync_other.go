package atomicfile

import (
	"errors"
	"syscall"
)

// isUnsupported reports whether a folder sync failed only because the
// platform or file system cannot sync folders.
func isUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EBADF)
}
