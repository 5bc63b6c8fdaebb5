package offheap

import (
	"errors"
	"syscall"
)

// protectNone makes a mapping inaccessible.
func protectNone(b []byte) error {
	return syscall.Mprotect(b, syscall.PROT_NONE)
}

// adviseHuge is unsupported here (advice only).
func adviseHuge([]byte) error {
	return errors.ErrUnsupported
}
