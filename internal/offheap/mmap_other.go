//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package offheap

import "errors"

// mapAnon is unsupported here: Alloc falls back to the Go heap.
func mapAnon(int) ([]byte, error) {
	return nil, errors.ErrUnsupported
}

// unmap is never called: there are no mappings.
func unmap([]byte) error {
	return nil
}
