//go:build unix

package atomicfile

import "syscall"

// NoFollow is the open flag that makes opening a symlink fail (O_NOFOLLOW);
// 0 where the platform has none.
const NoFollow = syscall.O_NOFOLLOW
