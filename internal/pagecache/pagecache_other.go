//go:build !linux

package pagecache

// writeback gives no advice where the kernel takes none.
type writeback struct{ fd uintptr }

func (*writeback) wrote(int) {}
