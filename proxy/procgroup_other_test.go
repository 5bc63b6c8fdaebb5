//go:build !unix

package proxy

import (
	"errors"
	"os/exec"
)

// ownGroup does nothing: this system has no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the process itself: this system has no process groups.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// getpgid fails: this system has no process groups.
func getpgid(int) (int, error) { return 0, errors.ErrUnsupported }

// joinGroupMain is the hostile server of joingroup_unix_test.go: process
// groups are a unix matter, so elsewhere it never runs.
func joinGroupMain(string) int { return 2 }
