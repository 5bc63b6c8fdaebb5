//go:build unix

package derive

import (
	"fmt"
	"os"
	"syscall"
)

// lockLog takes an exclusive flock on the open event log, so that two
// appenders to the same log take turns. It waits for the lock. The returned
// function releases it.
func lockLog(f *os.File) (func(), error) {
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
