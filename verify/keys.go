package verify

import (
	"errors"
	"fmt"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/keyring"
)

// endVerifier checks an event log's session_end signatures with a keyring
// and a trust file, and speaks capture's error language: a key neither
// holds (or a revoked one) is capture.ErrUnknownKey (the end is then not
// vouched for: incomplete), a key that is held but does not match is a bad
// signature (tampered).
type endVerifier struct {
	k *keyring.Keyring
	t *keyring.TrustSet
}

// EndVerifier returns the verifier of session_end signatures for the given
// keyring and trust set (either may be nil), or nil when both are nil.
func EndVerifier(k *keyring.Keyring, t *keyring.TrustSet) capture.SignatureVerifier {
	if k == nil && t == nil {
		return nil
	}
	return endVerifier{k: k, t: t}
}

func (v endVerifier) Verify(keyID, alg string, msg []byte, sig string) error {
	var bad, revoked, other error
	classify := func(err error, holderAlgMismatch bool) {
		switch {
		case errors.Is(err, keyring.ErrBadSignature), holderAlgMismatch && errors.Is(err, keyring.ErrAlgorithm):
			if bad == nil {
				bad = err
			}
		case errors.Is(err, keyring.ErrRevoked):
			if revoked == nil {
				revoked = err
			}
		default:
			if other == nil {
				other = err
			}
		}
	}
	if v.k != nil {
		err := v.k.Verify(keyID, alg, msg, sig)
		if err == nil {
			return nil
		}
		// the keyring holds this key id with another algorithm: the
		// signature entry does not match the key it names
		classify(err, true)
	}
	if v.t != nil {
		err := v.t.Verify(keyID, alg, msg, sig)
		if err == nil {
			return nil
		}
		// a trust file holds only Ed25519 keys: another algorithm is
		// simply not checkable with it
		classify(err, false)
	}
	switch {
	case bad != nil:
		return bad
	case revoked != nil:
		return fmt.Errorf("%v: %w", revoked, capture.ErrUnknownKey)
	case other != nil:
		return fmt.Errorf("%v: %w", other, capture.ErrUnknownKey)
	}
	return capture.ErrUnknownKey
}
