package keyring

import (
	"errors"
	"fmt"
	"time"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// SecretStore is an OS secret store: Secret Service on Linux, Keychain on
// macOS, Credential Manager on Windows. Secrets are hex strings; the user
// name is the key id.
type SecretStore interface {
	Set(service, user, secret string) error
	Get(service, user string) (string, error)
	Delete(service, user string) error
}

// ErrSecretNotFound is wrapped by a SecretStore's error for a secret it
// does not hold.
var ErrSecretNotFound = errors.New("secret not found")

// The real store is package keyring/osstore, which the command wires in
// (Options.OS): keyring itself links no D-Bus client.

// osHint names the fix when the OS keyring does not answer.
const osHint = "no OS keyring answered: on Linux start a Secret Service, e.g. " +
	"'dbus-run-session -- sh -c \"echo -n pass | gnome-keyring-daemon --unlock --components=secrets; witness ...\"' " +
	"(see README, Running the tests), or use --backend file"

// withTimeout runs f, giving up after opts.Timeout: a locked keyring can
// block forever waiting for a password prompt nobody sees.
func withTimeout[T any](opts Options, what string, f func() (T, error)) (T, error) {
	if opts.OS == nil {
		var zero T
		return zero, exitcode.New(exitcode.Failure, fmt.Errorf("OS keyring %s: no OS secret store is wired into this program", what),
			"use --backend file, or a witness build whose command passes keyring/osstore")
	}
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	t := time.NewTimer(opts.Timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			if errors.Is(r.err, ErrSecretNotFound) {
				return r.v, exitcode.New(exitcode.Failure, fmt.Errorf("OS keyring %s: secret not found (service %q)", what, opts.Service),
					"the OS keyring lost this key's secret; rotate to a new key with 'witness key rotate'")
			}
			return r.v, exitcode.New(exitcode.Failure, fmt.Errorf("OS keyring %s: %w", what, r.err), osHint)
		}
		return r.v, nil
	case <-t.C:
		var zero T
		return zero, exitcode.New(exitcode.Failure, fmt.Errorf("OS keyring %s: no answer within %s", what, opts.Timeout), osHint)
	}
}

func osGet(opts Options, keyID string) (string, error) {
	return withTimeout(opts, "get "+keyID, func() (string, error) { return opts.OS.Get(opts.Service, keyID) })
}

func osSet(opts Options, keyID, secret string) error {
	_, err := withTimeout(opts, "set "+keyID, func() (struct{}, error) { return struct{}{}, opts.OS.Set(opts.Service, keyID, secret) })
	return err
}

func osDelete(opts Options, keyID string) error {
	_, err := withTimeout(opts, "delete "+keyID, func() (struct{}, error) { return struct{}{}, opts.OS.Delete(opts.Service, keyID) })
	return err
}
