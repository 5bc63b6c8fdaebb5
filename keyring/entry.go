package keyring

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// Key algorithms as written in keys.json ("hmac" is 0.1.0's name).
const (
	AlgHMAC    = "hmac"
	AlgEd25519 = "ed25519"
)

// Signature algorithm names (Signer.Algorithm, seal signature tags).
const (
	SigHMACSHA256 = "hmac-sha256"
	SigEd25519    = "ed25519"
)

// Backends say where an entry's secret lives.
const (
	BackendFile = "file"
	BackendOS   = "os"
)

// keyTimeFormat is the 0.1.0 key timestamp form (UTC, microseconds, Z).
const keyTimeFormat = "2006-01-02T15:04:05.000000Z"

// SecretSize is the size of every generated secret: an HMAC key or an
// Ed25519 seed.
const SecretSize = 32

// Entry is one key of a keyring. Its secret is never exported.
type Entry struct {
	KeyID     string
	Algorithm string // AlgHMAC or AlgEd25519
	Active    bool
	CreatedAt string
	RevokedAt string // "" when not revoked
	Backend   string // BackendFile or BackendOS
	PublicKey string // Ed25519 public key, base64 (std, padded); "" for HMAC
	secret    []byte // nil for OS-backend entries until fetched
}

// Revoked reports whether the key was revoked.
func (e Entry) Revoked() bool { return e.RevokedAt != "" }

// sigAlg is the signature algorithm name of the entry's key.
func (e Entry) sigAlg() string {
	if e.Algorithm == AlgEd25519 {
		return SigEd25519
	}
	return SigHMACSHA256
}

// sigAlgFor maps a keyring algorithm to its signature algorithm name.
func sigAlgFor(alg string) (string, error) {
	switch alg {
	case AlgHMAC:
		return SigHMACSHA256, nil
	case AlgEd25519:
		return SigEd25519, nil
	}
	return "", fmt.Errorf("unknown key algorithm %q (known: hmac, ed25519)", alg)
}

// newEntry generates a fresh key. HMAC key ids are 0.1.0 timestamps;
// Ed25519 key ids are "ed25519-" plus 16 hex digits of the public key's
// sha256, unique across witnesses so trust files can be merged.
func newEntry(alg string, now time.Time, rnd io.Reader) (Entry, error) {
	secret := make([]byte, SecretSize)
	if _, err := io.ReadFull(rnd, secret); err != nil {
		return Entry{}, fmt.Errorf("generate key: %w", err)
	}
	ts := now.UTC().Format(keyTimeFormat)
	e := Entry{Algorithm: alg, Active: true, CreatedAt: ts, Backend: BackendFile, secret: secret}
	switch alg {
	case AlgHMAC:
		e.KeyID = ts
	case AlgEd25519:
		pub := ed25519.NewKeyFromSeed(secret).Public().(ed25519.PublicKey)
		e.PublicKey = base64.StdEncoding.EncodeToString(pub)
		sum := sha256.Sum256(pub)
		e.KeyID = "ed25519-" + hex.EncodeToString(sum[:8])
	default:
		return Entry{}, fmt.Errorf("unknown key algorithm %q (known: hmac, ed25519)", alg)
	}
	return e, nil
}
