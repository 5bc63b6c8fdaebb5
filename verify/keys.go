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
	var errs []error
	if v.k != nil {
		err := v.k.Verify(keyID, alg, msg, sig)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if v.t != nil {
		err := v.t.Verify(keyID, alg, msg, sig)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	for _, err := range errs {
		if errors.Is(err, keyring.ErrBadSignature) {
			return err
		}
	}
	for _, err := range errs {
		if errors.Is(err, keyring.ErrRevoked) {
			return fmt.Errorf("%v: %w", err, capture.ErrUnknownKey)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v: %w", errs[0], capture.ErrUnknownKey)
	}
	return capture.ErrUnknownKey
}
