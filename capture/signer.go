package capture

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
