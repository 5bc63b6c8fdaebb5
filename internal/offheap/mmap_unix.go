//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package offheap

import "syscall"

// mapAnon maps n bytes of anonymous, private, zeroed memory.
func mapAnon(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// unmap returns a mapping of mapAnon to the system.
func unmap(b []byte) error {
	return syscall.Munmap(b)
}
