package keyring

import (
	"errors"
	"fmt"
	"strings"
)

// Source names of the keys a Verifier holds, as they appear in "verified
// with ..." details.
const (
	sourceKeyring = "keyring"
	sourceTrust   = "trust file"
	SourceLegacy  = LegacyEnv
)

// Signed says which key made a signature that verified.
type Signed struct {
	KeyID    string // the label of the key that verified it ("" for the legacy key)
	Source   string // SourceKeyring, SourceTrust or SourceLegacy
	Identity string // the signer's identity (see Ed25519Identity, HMACIdentity)
}

// Verifier checks signatures against every key a verifier trusts (a
// keyring, a trust file, a legacy ATW_WITNESS_KEY key) as one set of key
// material. Two rules hold across all of them:
//
//   - a signer is its key material: Check reports the identity of the key
//     that verified a signature, whatever label the signature carries;
//   - revocation wins: key material revoked in any source (under any key
//     id) never verifies, even where another source lists it unrevoked.
//
// A Verifier is not safe for concurrent use (it caches identities).
type Verifier struct {
	cands []*candidate
	where string // "keyring PATH or the trust file", for messages
}

type candidate struct {
	keyID     string
	alg       string // SigHMACSHA256 | SigEd25519
	source    string
	revokedAt string
	pub       string                 // Ed25519, standard base64
	secret    func() ([]byte, error) // HMAC
	id        string
	idErr     error
	idDone    bool
}

func (c *candidate) identity() (string, error) {
	if !c.idDone {
		c.idDone = true
		if c.alg == SigEd25519 {
			c.id, c.idErr = Ed25519Identity(c.pub)
		} else {
			s, err := c.secret()
			if err != nil {
				c.idErr = err
			} else {
				c.id = hmacIdentity(s)
			}
		}
	}
	return c.id, c.idErr
}

func (c *candidate) verify(msg []byte, sig string) error {
	var err error
	if c.alg == SigEd25519 {
		err = verifyEd25519(c.pub, msg, sig)
	} else {
		s, serr := c.secret()
		if serr != nil {
			return serr
		}
		err = verifyHMAC(s, msg, sig)
	}
	switch {
	case err == nil:
		return nil
	case c.keyID != "":
		return fmt.Errorf("key %s: %w", c.keyID, err)
	}
	return fmt.Errorf("%s: %w", c.source, err)
}

// NewVerifier returns a verifier over the keys of k, t and a legacy HMAC
// key; any of them may be nil. Keys are tried in that order: trust file,
// keyring, legacy key.
func NewVerifier(k *Keyring, t *TrustSet, legacy []byte) *Verifier {
	v := &Verifier{}
	var where []string
	if t != nil {
		for _, tk := range t.Keys {
			v.cands = append(v.cands, &candidate{keyID: tk.KeyID, alg: SigEd25519, source: sourceTrust, revokedAt: tk.RevokedAt, pub: tk.PublicKey})
		}
		where = append(where, "the trust file")
	}
	if k != nil {
		for i, e := range k.entries {
			c := &candidate{keyID: e.KeyID, alg: e.sigAlg(), source: sourceKeyring, revokedAt: e.RevokedAt, pub: e.PublicKey}
			i := i
			c.secret = func() ([]byte, error) { return k.secret(i) }
			v.cands = append(v.cands, c)
		}
		where = append([]string{"keyring " + k.path}, where...)
	}
	if legacy != nil {
		key := append([]byte(nil), legacy...)
		v.cands = append(v.cands, &candidate{alg: SigHMACSHA256, source: SourceLegacy, secret: func() ([]byte, error) { return key, nil }})
		where = append(where, LegacyEnv)
	}
	v.where = strings.Join(where, " or ")
	if v.where == "" {
		v.where = "the keys given"
	}
	return v
}

// revocation returns the revoked candidate holding the same key material as
// c (c itself when c is revoked), or nil. Key material whose identity
// cannot be computed (an OS keyring secret that cannot be fetched) is only
// matched by label.
func (v *Verifier) revocation(c *candidate) *candidate {
	if c.revokedAt != "" {
		return c
	}
	id, err := c.identity()
	if err != nil {
		return nil
	}
	for _, o := range v.cands {
		if o.revokedAt == "" || o.alg != c.alg {
			continue
		}
		if oid, err := o.identity(); err == nil && oid == id {
			return o
		}
	}
	return nil
}

// revokedErr says that c cannot vouch because r (c itself, or another
// label of the same key material) was revoked. signed says the signature was
// found to be c's (it carried no key id).
func revokedErr(c, r *candidate, signed bool) error {
	name := "key " + c.keyID
	if c.keyID == "" {
		name = "the " + c.source + " key"
	}
	switch {
	case r == c || r.keyID == c.keyID && r.source == c.source:
		if signed {
			return fmt.Errorf("signed by %s, which was revoked at %s: %w", name, r.revokedAt, ErrRevoked)
		}
		return fmt.Errorf("%s was revoked at %s: %w", name, r.revokedAt, ErrRevoked)
	case r.keyID == c.keyID:
		if signed {
			return fmt.Errorf("signed by %s, which was revoked in the %s at %s: %w", name, r.source, r.revokedAt, ErrRevoked)
		}
		return fmt.Errorf("%s was revoked in the %s at %s: %w", name, r.source, r.revokedAt, ErrRevoked)
	case signed:
		return fmt.Errorf("signed by %s, the same key material as key %s of the %s, which was revoked at %s: %w", name, r.keyID, r.source, r.revokedAt, ErrRevoked)
	}
	return fmt.Errorf("%s is the same key material as key %s of the %s, which was revoked at %s: %w", name, r.keyID, r.source, r.revokedAt, ErrRevoked)
}

// Check verifies signature sig (algorithm alg) over msg. With keyID only
// the keys filed under that id are used; without, every key of the
// algorithm is tried. It returns who signed, or an error wrapping
// ErrBadSignature, ErrRevoked, ErrUnknownKey or ErrAlgorithm.
func (v *Verifier) Check(keyID, alg string, msg []byte, sig string) (Signed, error) {
	if alg != SigHMACSHA256 && alg != SigEd25519 {
		return Signed{}, fmt.Errorf("unknown signature algorithm %q (known: hmac-sha256, ed25519)", alg)
	}
	var sel []*candidate
	if keyID != "" {
		var other *candidate
		for _, c := range v.cands {
			if c.keyID != keyID {
				continue
			}
			if c.alg != alg {
				other = c
				continue
			}
			sel = append(sel, c)
		}
		if len(sel) == 0 {
			if other != nil {
				return Signed{}, fmt.Errorf("key %s is %s, the signature is %s: %w", keyID, other.alg, alg, ErrAlgorithm)
			}
			return Signed{}, fmt.Errorf("key %s: %w in %s", keyID, ErrUnknownKey, v.where)
		}
		// every key filed under that id is revoked: no need to reach
		// for its secret
		revoked := true
		for _, c := range sel {
			revoked = revoked && c.revokedAt != ""
		}
		if revoked {
			return Signed{}, revokedErr(sel[0], sel[0], false)
		}
	} else {
		for _, c := range v.cands {
			if c.alg == alg {
				sel = append(sel, c)
			}
		}
	}
	var firstErr error
	usable := 0
	for _, c := range sel {
		err := c.verify(msg, sig)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) {
				// the key could not be used (an OS keyring failure)
				return Signed{}, err
			}
			if firstErr == nil {
				firstErr = err
			}
			if v.revocation(c) == nil {
				usable++
			}
			continue
		}
		if r := v.revocation(c); r != nil {
			return Signed{}, revokedErr(c, r, keyID == "")
		}
		id, err := c.identity()
		if err != nil {
			return Signed{}, err
		}
		return Signed{KeyID: c.keyID, Source: c.source, Identity: id}, nil
	}
	if keyID != "" {
		// a key named by the signature but revoked: say so, whether or
		// not the signature matches it
		for _, c := range sel {
			if r := v.revocation(c); r != nil {
				return Signed{}, revokedErr(c, r, false)
			}
		}
		return Signed{}, firstErr
	}
	if len(sel) == 1 && sel[0].source == SourceLegacy {
		// only ATW_WITNESS_KEY could check it (a 0.1.0 seal)
		return Signed{}, firstErr
	}
	if usable == 0 {
		return Signed{}, fmt.Errorf("no non-revoked %s key in %s: %w", alg, v.where, ErrUnknownKey)
	}
	return Signed{}, fmt.Errorf("%w with any of the %d non-revoked %s keys in %s", ErrBadSignature, usable, alg, v.where)
}

// Verify is Check without the signer (it satisfies the capture package's
// signature verifier interface).
func (v *Verifier) Verify(keyID, alg string, msg []byte, sig string) error {
	_, err := v.Check(keyID, alg, msg, sig)
	return err
}
