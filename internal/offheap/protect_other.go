//go:build !linux && !darwin

package offheap

import "errors"

// protectNone is unsupported here: Release unmaps instead.
func protectNone([]byte) error {
	return errors.ErrUnsupported
}

// adviseHuge is unsupported here (advice only).
func adviseHuge([]byte) error {
	return errors.ErrUnsupported
}
