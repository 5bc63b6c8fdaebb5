package eventlog

import "errors"

// ErrRevokedKey is wrapped, together with ErrUnknownKey, by verifiers for a
// signature whose key was revoked: it vouches for nothing, and VerifyLog
// says why.
var ErrRevokedKey = errors.New("revoked key")

// SignerVerifier is a SignatureVerifier that also says who signed: the
// signer's identity, derived from its key material (package keyring's
// Verifier). VerifyLog uses it when the verifier given implements it, so
// that one key under two labels counts as one signer.
type SignerVerifier interface {
	SignatureVerifier
	// VerifySigner is Verify, returning the identity of the key that made
	// a good signature.
	VerifySigner(keyID, alg string, msg []byte, sig string) (signer string, err error)
}
