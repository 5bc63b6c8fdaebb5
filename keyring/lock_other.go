//go:build !unix

package keyring

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile takes a lock by creating path+".lock" exclusively (no flock on
// this platform); a stale lock older than a minute is broken.
func lockFile(path string) (func(), error) {
	lp := path + ".lock"
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(lp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(lp) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", lp, err)
		}
		if time.Now().After(deadline) {
			os.Remove(lp)
			deadline = time.Now().Add(time.Minute)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
