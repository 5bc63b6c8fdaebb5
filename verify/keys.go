package verify

import (
	"errors"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/keyring"
)

// endVerifier checks an event log's session_end signatures with a keyring
// and a trust file as one set of key material (keyring.Verifier), and
// speaks capture's error language: a key neither holds is
// eventlog.ErrUnknownKey (the end is then not vouched for: incomplete); so
// is a revoked key, whatever the other source says about the same key
// material (revocation wins); a key that is held but does not match is a
// bad signature (tampered). It tells capture who signed, so that one key
// under two labels vouches once.
type endVerifier struct {
	k *keyring.Keyring
	v *keyring.Verifier
}

// EndVerifier returns the verifier of session_end signatures for the given
// keyring and trust set (either may be nil), or nil when both are nil.
func EndVerifier(k *keyring.Keyring, t *keyring.TrustSet) eventlog.SignatureVerifier {
	if k == nil && t == nil {
		return nil
	}
	return endVerifier{k: k, v: keyring.NewVerifier(k, t, nil)}
}

func (e endVerifier) Verify(keyID, alg string, msg []byte, sig string) error {
	_, err := e.VerifySigner(keyID, alg, msg, sig)
	return err
}

// VerifySigner implements eventlog.SignerVerifier.
func (e endVerifier) VerifySigner(keyID, alg string, msg []byte, sig string) (string, error) {
	s, err := e.v.Check(keyID, alg, msg, sig)
	switch {
	case err == nil:
		return s.Identity, nil
	case errors.Is(err, keyring.ErrBadSignature):
		return "", err
	case errors.Is(err, keyring.ErrAlgorithm) && e.keyringHolds(keyID):
		// the keyring holds this key id with another algorithm: the
		// signature entry does not match the key it names (a trust file
		// holds only Ed25519 keys: another algorithm is simply not
		// checkable with it)
		return "", err
	}
	return "", untrusted{err: err, revoked: errors.Is(err, keyring.ErrRevoked)}
}

// untrusted is a signature no trusted key vouches for: it reads as the
// keyring's reason and matches eventlog.ErrUnknownKey (and
// eventlog.ErrRevokedKey for a revoked key).
type untrusted struct {
	err     error
	revoked bool
}

func (u untrusted) Error() string { return u.err.Error() }
func (u untrusted) Unwrap() error { return u.err }
func (u untrusted) Is(target error) bool {
	return target == eventlog.ErrUnknownKey || u.revoked && target == eventlog.ErrRevokedKey
}

func (e endVerifier) keyringHolds(keyID string) bool {
	if e.k == nil || keyID == "" {
		return false
	}
	for _, en := range e.k.Entries() {
		if en.KeyID == keyID {
			return true
		}
	}
	return false
}
