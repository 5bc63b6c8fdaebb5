//go:build windows

package tlog

import (
	"context"
	"errors"

	"github.com/transparency-dev/tessera"
)

// posixDriver: Tessera's POSIX driver uses fcntl locks and O_DIRECTORY,
// which Windows lacks (docs/design/platforms.md). A Windows witness anchors
// in a served log (--log URL) or a MySQL one.
func posixDriver(ctx context.Context, dir string) (tessera.Driver, error) {
	return nil, errors.New("the POSIX log driver is not available on Windows: use --log URL (witness log serve elsewhere) or --storage mysql:DSN")
}
