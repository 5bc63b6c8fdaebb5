// Package exitcode owns the witness process exit codes and the error type that
// carries one, with an optional hint for the user, from library code to the CLI.
//
// Each code means exactly one thing; docs/exit-codes.md documents them and a
// test keeps that document and these constants in step.
package exitcode

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// Code is a process exit status with a single documented meaning.
type Code int

const (
	// OK: the command did what was asked; for verify, the evidence verified.
	OK Code = 0
	// Violation: the evidence is intact but breaks the seal or a policy
	// (unsealed tool, scope drift, prompt drift, quorum not met).
	Violation Code = 1
	// Usage: the command line or a configuration input (spec, scenario,
	// policy, flags) is wrong; nothing was judged.
	Usage Code = 2
	// Tampered: evidence is tampered with or invalid (bad signature, broken
	// hash chain, malformed seal, events, cassette, graph or audit).
	Tampered Code = 3
	// Incomplete: evidence is incomplete (missing session end, cut-off tail,
	// a recorded recording failure, truncated audit snapshot).
	Incomplete Code = 4
	// Failure: the operation itself failed (I/O error, MCP server died or
	// timed out, OS keyring unreachable); no verdict was reached.
	Failure Code = 5
	// Unauthenticated: nothing shows the evidence was altered, but it
	// cannot be authenticated with what the verifier was given (a signature
	// by a key neither the keyring nor the trust file holds, a graph
	// without its event log): cannot check, give the key or the log.
	Unauthenticated Code = 6
)

// All lists every code in ascending order.
var All = []Code{OK, Violation, Usage, Tampered, Incomplete, Failure, Unauthenticated}

// Name is the stable lower-case name of the code, as used in docs and JSON.
func (c Code) Name() string {
	switch c {
	case OK:
		return "ok"
	case Violation:
		return "violation"
	case Usage:
		return "usage"
	case Tampered:
		return "tampered"
	case Incomplete:
		return "incomplete"
	case Failure:
		return "failure"
	case Unauthenticated:
		return "unauthenticated"
	}
	return fmt.Sprintf("code-%d", int(c))
}

// Error carries an exit code and an optional hint with an underlying error.
type Error struct {
	Code Code
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with the given code, error and hint.
func New(code Code, err error, hint string) *Error {
	return &Error{Code: code, Err: err, Hint: hint}
}

// Errorf formats an error carrying code and no hint.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// WithHint returns err with its hint set; a plain error becomes a Failure.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Err: err, Hint: hint}
	}
	return &Error{Code: Failure, Err: err, Hint: hint}
}

// Of returns the exit code carried by err: OK for nil, Failure when err
// carries none.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failure
}

// HintOf returns the outermost non-empty hint carried by err, if any.
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}

// Input returns the error for an input file that could not be opened or
// read, with the message prefix what ("read seal") and hint. The rule is the
// same for every command (docs/exit-codes.md): an input named on the command
// line that does not exist, that this user may not read, or that is a
// directory is a usage error (2), since the command line is wrong; any other
// I/O error is a failure (5).
func Input(what string, err error, hint string) *Error {
	code := Failure
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR) {
		code = Usage
	}
	return New(code, fmt.Errorf("%s: %w", what, err), hint)
}
