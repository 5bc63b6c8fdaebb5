package offheap

import "syscall"

// madvHugepage is MADV_HUGEPAGE (linux/mman-common.h); the syscall
// package does not name it.
const madvHugepage = 14

// protectNone gives a mapping's pages back (MADV_DONTNEED: the address
// range stays, its contents go) and makes the range inaccessible.
func protectNone(b []byte) error {
	if err := syscall.Madvise(b, syscall.MADV_DONTNEED); err != nil {
		return err
	}
	return syscall.Mprotect(b, syscall.PROT_NONE)
}

// adviseHuge asks for transparent huge pages.
func adviseHuge(b []byte) error {
	return syscall.Madvise(b, madvHugepage)
}
