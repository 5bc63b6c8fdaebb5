//go:build !windows

package tlog

import (
	"context"

	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
)

// posixDriver opens Tessera's POSIX driver on dir.
func posixDriver(ctx context.Context, dir string) (tessera.Driver, error) {
	return posix.New(ctx, posix.Config{Path: dir})
}
