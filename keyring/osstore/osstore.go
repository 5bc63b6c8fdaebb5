// Package osstore is the OS secret store behind keyring's "os" backend:
// Secret Service (over D-Bus) on Linux, Keychain on macOS, Credential
// Manager on Windows, through github.com/zalando/go-keyring.
//
// It lives apart from package keyring so that only the command wires it
// in: the analysis packages (verify, firewall) read keyrings without
// linking a D-Bus client, whose library can start a process (dbus-launch).
package osstore

import (
	"errors"
	"fmt"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/agent-trace-witness/witness/keyring"
)

// System is the real OS secret store. It implements keyring.SecretStore;
// a secret the store does not hold is keyring.ErrSecretNotFound.
type System struct{}

var _ keyring.SecretStore = System{}

// Set stores secret under service and user.
func (System) Set(service, user, secret string) error {
	return gokeyring.Set(service, user, secret)
}

// Get returns the secret under service and user.
func (System) Get(service, user string) (string, error) {
	s, err := gokeyring.Get(service, user)
	return s, notFound(err)
}

// Delete removes the secret under service and user.
func (System) Delete(service, user string) error {
	return notFound(gokeyring.Delete(service, user))
}

func notFound(err error) error {
	if errors.Is(err, gokeyring.ErrNotFound) {
		return fmt.Errorf("%w: %v", keyring.ErrSecretNotFound, err)
	}
	return err
}
