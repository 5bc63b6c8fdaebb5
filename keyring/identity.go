package keyring

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// A signer's identity is its key material, never its label: the same key
// listed under two key ids, or once with and once without a key id, is one
// signer. Quorums count identities, and a revocation applies to every label
// of the revoked key material (docs/design/seals-and-keys.md).
//
// Identities are "ed25519:" + the sha256 (64 hex) of the raw public key, and
// "hmac-sha256:" + a keyed fingerprint of the secret: HMAC-SHA256(secret,
// hmacIdentityLabel). The fingerprint reveals nothing about the secret and
// cannot stand in for a signature: no message witness signs equals the
// label (it is not JSON).
const hmacIdentityLabel = "witness signer identity v1\x00"

// Ed25519Identity returns the identity of an Ed25519 public key given in
// standard base64.
func Ed25519Identity(pubB64 string) (string, error) {
	pub, err := base64.StdEncoding.Strict().DecodeString(pubB64)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("public key is not %d bytes of standard base64", ed25519.PublicKeySize)
	}
	sum := sha256.Sum256(pub)
	return SigEd25519 + ":" + hex.EncodeToString(sum[:]), nil
}

// hmacIdentity returns the identity of an HMAC secret: a keyed fingerprint,
// never the secret.
func hmacIdentity(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(hmacIdentityLabel))
	return SigHMACSHA256 + ":" + hex.EncodeToString(m.Sum(nil))
}

// ShortIdentity abbreviates an identity for display: the algorithm and the
// first 16 hex digits.
func ShortIdentity(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == ':' {
			if len(id) > i+1+16 {
				return id[:i+1+16]
			}
			return id
		}
	}
	return id
}

// SignedBy reports whether signature sig (algorithm alg) over msg was made
// by signer's key, whatever key id it is filed under.
func SignedBy(s Signer, msg []byte, alg, sig string) bool {
	if alg != s.Algorithm() {
		return false
	}
	switch t := s.(type) {
	case *hmacSigner:
		return verifyHMAC(t.key, msg, sig) == nil
	case *ed25519Signer:
		return verifyEd25519(t.PublicKey(), msg, sig) == nil
	}
	if p, ok := s.(PublicKeyer); ok {
		return verifyEd25519(p.PublicKey(), msg, sig) == nil
	}
	mine, err := s.Sign(msg)
	return err == nil && hmac.Equal([]byte(mine), []byte(sig))
}
