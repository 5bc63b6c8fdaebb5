package drift

import (
	"os"
	"syscall"
)

// SignalName names the signals that stop a serve as the report does:
// SIGTERM, SIGINT, SIGHUP (another signal by its description).
func SignalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case nil:
		return ""
	}
	return sig.String()
}
