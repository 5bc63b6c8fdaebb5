// Package testkeys is the tests' one HMAC-SHA256 signer and verifier: the
// eventlog.Signer and eventlog.SignatureVerifier of unit tests that need
// keys without a keyring. It imports nothing of the witness, so the tests
// of any package (eventlog's own too) can use it.
package testkeys

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// HMAC is one HMAC-SHA256 key: a signer, and a verifier of that key alone.
type HMAC struct {
	ID  string
	Key []byte
	// Unknown wraps the error for a signature by another key id (the
	// caller's eventlog.ErrUnknownKey); nil: a plain error.
	Unknown error
}

// KeyID returns the key's id.
func (k HMAC) KeyID() string { return k.ID }

// Algorithm returns "hmac-sha256".
func (k HMAC) Algorithm() string { return "hmac-sha256" }

// Sign returns the hex HMAC-SHA256 of msg.
func (k HMAC) Sign(msg []byte) (string, error) { return sum(k.Key, msg), nil }

// Verify checks a signature by this key.
func (k HMAC) Verify(keyID, alg string, msg []byte, sig string) error {
	return Set{Keys: map[string][]byte{k.ID: k.Key}, Unknown: k.Unknown}.Verify(keyID, alg, msg, sig)
}

// Set verifies HMAC-SHA256 signatures by any of its keys.
type Set struct {
	Keys    map[string][]byte
	Unknown error // as in HMAC
}

// Verify checks a signature by one of the set's keys.
func (s Set) Verify(keyID, alg string, msg []byte, sig string) error {
	key, ok := s.Keys[keyID]
	if !ok {
		if s.Unknown != nil {
			return fmt.Errorf("key %s: %w", keyID, s.Unknown)
		}
		return fmt.Errorf("key %s: unknown", keyID)
	}
	if alg != "hmac-sha256" {
		return fmt.Errorf("unsupported alg %q", alg)
	}
	if !hmac.Equal([]byte(sum(key, msg)), []byte(sig)) {
		return errors.New("hmac mismatch")
	}
	return nil
}

func sum(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}
