package keyring

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// Signer signs messages with one key.
type Signer interface {
	// KeyID is the key's id in its keyring; "" for a legacy
	// ATW_WITNESS_KEY key, which has none.
	KeyID() string
	// Algorithm is "hmac-sha256" or "ed25519".
	Algorithm() string
	// Sign returns the signature over msg: lowercase hex for hmac-sha256,
	// standard base64 for ed25519.
	Sign(msg []byte) (sig string, err error)
}

// PublicKeyer is implemented by signers whose key has a public half; it
// returns it in standard base64.
type PublicKeyer interface {
	PublicKey() string
}

// Errors a verification can end with; test with errors.Is.
var (
	ErrBadSignature = errors.New("signature does not verify")
	ErrRevoked      = errors.New("key revoked")
	ErrUnknownKey   = errors.New("key not found")
	ErrAlgorithm    = errors.New("algorithm mismatch")
)

type hmacSigner struct {
	id  string
	key []byte
}

func (s *hmacSigner) KeyID() string     { return s.id }
func (s *hmacSigner) Algorithm() string { return SigHMACSHA256 }
func (s *hmacSigner) Sign(msg []byte) (string, error) {
	return HMACHex(s.key, msg), nil
}

type ed25519Signer struct {
	id   string
	priv ed25519.PrivateKey
}

func (s *ed25519Signer) KeyID() string     { return s.id }
func (s *ed25519Signer) Algorithm() string { return SigEd25519 }
func (s *ed25519Signer) Sign(msg []byte) (string, error) {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, msg)), nil
}
func (s *ed25519Signer) PublicKey() string {
	return base64.StdEncoding.EncodeToString(s.priv.Public().(ed25519.PublicKey))
}

// HMACHex returns the lowercase hex HMAC-SHA256 of msg under key.
func HMACHex(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// verifyHMAC checks a lowercase-hex HMAC-SHA256 signature in constant time.
// Uppercase hex does not verify (as in 0.1.0): the signature text is
// compared, not its decoded bytes, so there is exactly one valid spelling.
func verifyHMAC(key, msg []byte, sig string) error {
	want := HMACHex(key, msg)
	if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) != 1 {
		return ErrBadSignature
	}
	return nil
}

// verifyEd25519 checks a standard-base64 Ed25519 signature against a
// standard-base64 public key.
func verifyEd25519(pubB64 string, msg []byte, sig string) error {
	pub, err := base64.StdEncoding.Strict().DecodeString(pubB64)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("public key is not %d bytes of standard base64", ed25519.PublicKeySize)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return fmt.Errorf("%w: not %d bytes of standard base64", ErrBadSignature, ed25519.SignatureSize)
	}
	// Reject non-canonical base64 spellings so one signature has one text.
	if base64.StdEncoding.EncodeToString(raw) != sig {
		return fmt.Errorf("%w: non-canonical base64", ErrBadSignature)
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), msg, raw) {
		return ErrBadSignature
	}
	return nil
}

func signerFor(e Entry, secret []byte) (Signer, error) {
	switch e.Algorithm {
	case AlgHMAC:
		return &hmacSigner{id: e.KeyID, key: secret}, nil
	case AlgEd25519:
		return &ed25519Signer{id: e.KeyID, priv: ed25519.NewKeyFromSeed(secret)}, nil
	}
	return nil, fmt.Errorf("key %s: unknown algorithm %q", e.KeyID, e.Algorithm)
}
