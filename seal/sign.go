package seal

import (
	"fmt"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// Sign signs body with signer: the signature covers the canonical body
// bytes only; the signer's key id is recorded beside it, unsigned.
func Sign(b Body, signer keyring.Signer) (*Sealed, error) {
	msg, err := b.canonicalBody()
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("encode seal body: %w", err), "")
	}
	sig, err := signer.Sign(msg)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("sign seal: %w", err), "")
	}
	return &Sealed{Body: b, Signature: signer.Algorithm() + ":" + sig, KeyID: signer.KeyID()}, nil
}

// Cosign appends signer's signature over the same canonical body. A key
// that already signed (primary or cosignature) is refused, whatever key id
// (or none) that signature carries: a signer is its key material.
func (s *Sealed) Cosign(signer keyring.Signer) error {
	id := signer.KeyID()
	if id == "" {
		return exitcode.New(exitcode.Usage, fmt.Errorf("cosigning needs a key with an id (a keyring key), not a legacy ATW_WITNESS_KEY"),
			"create a keyring with 'witness key generate'")
	}
	if s.KeyID == id {
		return exitcode.New(exitcode.Usage, fmt.Errorf("key %s already signed this seal (primary signature)", id), "cosign with another witness's keyring (--keyring)")
	}
	for _, c := range s.Cosignatures {
		if c.KeyID == id {
			return exitcode.New(exitcode.Usage, fmt.Errorf("key %s already cosigned this seal", id), "cosign with another witness's keyring (--keyring)")
		}
	}
	msg, err := s.canonicalBody()
	if err != nil {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("encode seal body: %w", err), "")
	}
	if alg, value, _ := splitSignature(s.Signature); keyring.SignedBy(signer, msg, alg, value) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("key %s already signed this seal (primary signature, filed as key_id %s)", id, orNone(s.KeyID)),
			"cosign with another witness's keyring (--keyring): a second signature by the same key counts once")
	}
	for i, c := range s.Cosignatures {
		if keyring.SignedBy(signer, msg, c.Alg, c.Sig) {
			return exitcode.New(exitcode.Usage, fmt.Errorf("key %s already cosigned this seal (cosignatures[%d], filed as key_id %s)", id, i, c.KeyID),
				"cosign with another witness's keyring (--keyring): a second signature by the same key counts once")
		}
	}
	sig, err := signer.Sign(msg)
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("cosign seal: %w", err), "")
	}
	c := Cosignature{KeyID: id, Alg: signer.Algorithm(), Sig: sig}
	if p, ok := signer.(keyring.PublicKeyer); ok {
		c.PublicKey = p.PublicKey()
	}
	s.Cosignatures = append(s.Cosignatures, c)
	return nil
}
