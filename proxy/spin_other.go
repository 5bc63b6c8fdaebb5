//go:build !linux

package proxy

// startSpinning is Linux only (spin_linux.go): elsewhere the streams run
// in pumpLines.
func (s *forwarding) startSpinning() bool { return false }
