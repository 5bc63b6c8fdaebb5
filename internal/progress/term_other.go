//go:build !linux && !aix && !solaris && !zos && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package progress

// IsTerminal reports false: no terminal is known on this system, so the
// progress line is off unless forced.
func IsTerminal(fd uintptr) bool { return false }
