package tlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// publicKey returns the Ed25519 public key of a keyring signer.
func publicKey(s keyring.Signer) (ed25519.PublicKey, error) {
	pk, ok := s.(keyring.PublicKeyer)
	if !ok || s.Algorithm() != keyring.SigEd25519 {
		return nil, fmt.Errorf("key %s is %s: a log or witness key must be ed25519", s.KeyID(), s.Algorithm())
	}
	pub, err := base64.StdEncoding.DecodeString(pk.PublicKey())
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("key %s: bad public key", s.KeyID())
	}
	return pub, nil
}

// noteSigner signs checkpoints as a signed note with a keyring key.
type noteSigner struct {
	name string
	hash uint32
	s    keyring.Signer
}

// NoteSigner returns a signed-note signer named name (the log's origin)
// over the keyring's Ed25519 key s, and the matching verifier key.
func NoteSigner(name string, s keyring.Signer) (note.Signer, string, error) {
	pub, err := publicKey(s)
	if err != nil {
		return nil, "", err
	}
	vkey, err := bundle.VerifierKey(name, pub)
	if err != nil {
		return nil, "", fmt.Errorf("log origin %q: %w", name, err)
	}
	return &noteSigner{name: name, hash: bundle.KeyHash(name, bundle.AlgEd25519, pub), s: s}, vkey, nil
}

func (n *noteSigner) Name() string    { return n.name }
func (n *noteSigner) KeyHash() uint32 { return n.hash }
func (n *noteSigner) Sign(msg []byte) ([]byte, error) {
	sig, err := n.s.Sign(msg)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(sig)
}

// Cosigner makes tlog-cosignature v1 signature lines with a keyring key.
type Cosigner struct {
	name string
	pub  ed25519.PublicKey
	s    keyring.Signer
}

// NewCosigner returns a cosigner named name (what verifiers list in their
// trust file as the key's key_id) over the keyring's Ed25519 key s.
func NewCosigner(name string, s keyring.Signer) (*Cosigner, error) {
	pub, err := publicKey(s)
	if err != nil {
		return nil, err
	}
	return &Cosigner{name: name, pub: pub, s: s}, nil
}

// Name is the witness name on its signature lines.
func (c *Cosigner) Name() string { return c.name }

// cosign returns the signature line ("— name base64\n") of a cosignature
// over checkpoint body at time t (seconds since the epoch).
func (c *Cosigner) cosign(body string, t uint64) (string, error) {
	sig, err := c.s.Sign(bundle.CosignatureMessage(t, body))
	if err != nil {
		return "", err
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return "", fmt.Errorf("key %s: bad signature", c.s.KeyID())
	}
	b := make([]byte, 12, 12+len(raw))
	binary.BigEndian.PutUint32(b, bundle.KeyHash(c.name, bundle.AlgCosignatureV1, c.pub))
	binary.BigEndian.PutUint64(b[4:], t)
	b = append(b, raw...)
	return "— " + c.name + " " + base64.StdEncoding.EncodeToString(b) + "\n", nil
}
