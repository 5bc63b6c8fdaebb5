//go:build !unix

package proctree

import (
	"errors"
	"runtime"
	"syscall"
)

// errUnsupported says why a server cannot be recorded on this system.
var errUnsupported = errors.New("running a stdio server under witness needs Unix process groups and signals, which " +
	runtime.GOOS + " does not have (no SIGTERM to stop the server, no way to find and end what it started); " +
	"see docs/design/platforms.md")

// Supported returns an error on this system: there are no process groups to
// signal and no process tree to sweep, so witness could neither stop a
// server gracefully nor promise that nothing it started outlives it. Start
// refuses rather than record a session whose end it cannot vouch for.
func Supported() error { return errUnsupported }

// Subreaper does nothing on this system.
func Subreaper() {}

func setsid(*syscall.SysProcAttr) {}

// Signal cannot signal a process group on this system.
func Signal(int, syscall.Signal) error { return errUnsupported }

func sweep(int, syscall.Signal) int { return 0 }

func reap(int) {}

// Alive reports false: Start never starts a server on this system.
func Alive(int) bool { return false }
