package seal

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
)

// in-toto / DSSE constants.
const (
	// payloadType is the DSSE payload type of in-toto statements.
	payloadType = "application/vnd.in-toto+json"
	// statementType is the in-toto Statement v1 type.
	statementType = "https://in-toto.io/Statement/v1"
	// PredicateType names the witness seal predicate.
	PredicateType = "https://w3id.org/agent-trace-witness/seal/v1"
)

// Envelope is a DSSE envelope.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"` // standard base64 of the statement
	Signatures  []EnvelopeS `json:"signatures"`
}

// EnvelopeS is one DSSE signature.
type EnvelopeS struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"` // standard base64
}

// pae is DSSE's pre-authentication encoding:
// "DSSEv1" SP len(type) SP type SP len(body) SP body.
func pae(payloadType string, payload []byte) []byte {
	b := []byte("DSSEv1 ")
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// statement returns the in-toto Statement v1 for the seal, as canonical
// JSON: one subject named name whose sha256 digest is the digest of the
// canonical seal body, and the whole seal file content as the predicate.
func statement(s *Sealed, name string) ([]byte, error) {
	digest, err := s.Digest()
	if err != nil {
		return nil, err
	}
	pred, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	st := map[string]any{
		"_type":         statementType,
		"subject":       []any{map[string]any{"name": name, "digest": map[string]string{"sha256": digest}}},
		"predicateType": PredicateType,
		"predicate":     json.RawMessage(pred),
	}
	return canon.Marshal(st)
}

// NewEnvelope wraps the seal's statement in a DSSE envelope signed by
// signer, which must be an Ed25519 key.
func NewEnvelope(s *Sealed, name string, signer keyring.Signer) (*Envelope, error) {
	if signer.Algorithm() != keyring.SigEd25519 {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("DSSE envelopes are signed with Ed25519; the key %s is %s", signer.KeyID(), signer.Algorithm()),
			"rotate to an Ed25519 key ('witness key rotate --alg ed25519') or use a keyring made with 'witness key generate'")
	}
	payload, err := statement(s, name)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("build in-toto statement: %w", err), "")
	}
	sig, err := signer.Sign(pae(payloadType, payload))
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("sign DSSE envelope: %w", err), "")
	}
	return &Envelope{
		PayloadType: payloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures:  []EnvelopeS{{KeyID: signer.KeyID(), Sig: sig}},
	}, nil
}

// Marshal returns the envelope as one line of canonical JSON plus a newline
// (the .intoto.jsonl bundle form).
func (e *Envelope) Marshal() ([]byte, error) {
	b, err := canon.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// EnvelopeOptions give the keys that verify a DSSE envelope.
type EnvelopeOptions struct {
	// Keyring and Trust hold the Ed25519 public keys that may have signed
	// the envelope (either may be nil).
	Keyring *keyring.Keyring
	Trust   *trustSet
	// Threshold is how many distinct keys must have signed (DSSE's t);
	// 0 means 1. Keys are told apart by their material, so one key under
	// two key ids counts once.
	Threshold int
}

// EnvelopeResult is the outcome of each signature of an envelope.
type EnvelopeResult struct {
	// Checks has one entry per signature, in envelope order; Which is
	// "envelope.signatures[i]". Status is ok, bad, revoked or
	// unknown-key (skipped, as the DSSE spec asks).
	Checks []Check `json:"checks"`
	// Distinct is the number of distinct keys that verified.
	Distinct int `json:"distinct_trusted_signers"`
}

// VerifyEnvelope checks a DSSE envelope's signatures with the trusted keys
// of trust (see VerifyEnvelopeWith) and returns the seal it carries.
func VerifyEnvelope(data []byte, name string, trust *trustSet) (*Sealed, error) {
	s, _, err := VerifyEnvelopeWith(data, name, EnvelopeOptions{Trust: trust})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// decodeB64 decodes a DSSE base64 field: the DSSE spec lets a writer use
// standard or URL-safe base64, with or without padding, so a reader must
// accept all four. Line breaks, which Go's decoder would skip, are refused.
func decodeB64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("a line break in base64")
	}
	var firstErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.Strict().DecodeString(s)
		if err == nil {
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// VerifyEnvelopeWith checks a DSSE envelope as the DSSE spec says: the
// payload and every signature may be in standard or URL-safe base64, with
// or without padding; a signature by a key neither the keyring nor the
// trust file holds (or, without a keyid, that no held key verifies) is
// skipped; at least Threshold distinct keys must verify. Stricter than the
// spec, like a seal's cosignatures: a signature that names a held key and
// does not verify is tampering, whatever else verifies.
//
// The error carries exitcode.Tampered for a malformed envelope or payload,
// a bad signature or one by a revoked key when no other verified, and
// exitcode.Unauthenticated when the envelope is intact but too few of its
// signatures are by keys the verifier holds (cannot check). In that last
// case the seal parsed from the payload is returned with the error, so the
// caller may still report what it says.
func VerifyEnvelopeWith(data []byte, name string, opts EnvelopeOptions) (*Sealed, *EnvelopeResult, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("envelope %w", err), "")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, nil, bad(err)
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", root, &perr)
	env := Envelope{PayloadType: r.String("payloadType", true), Payload: r.String("payload", true)}
	r.Objects("signatures", true, func(i int, sr *jsontree.ObjectReader) {
		env.Signatures = append(env.Signatures, EnvelopeS{KeyID: sr.String("keyid", false), Sig: sr.String("sig", true)})
		sr.Done()
	})
	r.Done()
	if perr != nil {
		return nil, nil, bad(perr)
	}
	if env.PayloadType != payloadType {
		return nil, nil, bad(fmt.Errorf("%s: payloadType %q, want %q", name, env.PayloadType, payloadType))
	}
	payload, err := decodeB64(env.Payload)
	if err != nil {
		return nil, nil, bad(fmt.Errorf("%s: payload is not base64 (standard or URL-safe): %v", name, err))
	}
	if len(env.Signatures) == 0 {
		return nil, nil, bad(fmt.Errorf("%s: no signatures", name))
	}
	threshold := opts.Threshold
	if threshold <= 0 {
		threshold = 1
	}
	res := &EnvelopeResult{}
	v := keyring.NewVerifier(opts.Keyring, opts.Trust, nil)
	pae := pae(env.PayloadType, payload)
	first := map[string]string{}
	for i, sg := range env.Signatures {
		c := Check{Which: fmt.Sprintf("envelope.signatures[%d]", i), KeyID: sg.KeyID, Alg: keyring.SigEd25519}
		raw, derr := decodeB64(sg.Sig)
		var signed keyring.Signed
		err := derr
		if derr == nil {
			signed, err = v.Check(sg.KeyID, keyring.SigEd25519, pae, base64.StdEncoding.EncodeToString(raw))
		}
		switch {
		case derr != nil:
			c.Status, c.Detail = StatusBad, "sig is not base64 (standard or URL-safe)"
		case err == nil:
			c.Status, c.Signer = StatusOK, signed.Identity
			c.Detail = "verified with " + signed.Source
			if w, dup := first[signed.Identity]; dup {
				c.Detail += "; same signer as " + w + ", counted once"
			} else {
				first[signed.Identity] = c.Which
				res.Distinct++
			}
		case errors.Is(err, keyring.ErrRevoked):
			c.Status, c.Detail = StatusRevoked, err.Error()
		case errors.Is(err, keyring.ErrBadSignature) && sg.KeyID != "":
			c.Status, c.Detail = StatusBad, err.Error()
		default:
			// a key the verifier does not hold, or no keyid and no held
			// key verifies it: skipped (DSSE: unknown signatures are
			// not an error)
			c.Status, c.Detail = statusUnknown, "skipped: "+err.Error()
		}
		res.Checks = append(res.Checks, c)
	}
	for _, c := range res.Checks {
		if c.Status == StatusBad {
			return nil, res, bad(fmt.Errorf("%s: %s (key %s) does not verify: %s", name, c.Which, orNone(c.KeyID), c.Detail))
		}
	}
	var short error
	if res.Distinct < threshold {
		revoked := ""
		for _, c := range res.Checks {
			if c.Status == StatusRevoked {
				revoked = c.Detail
				break
			}
		}
		if revoked != "" && res.Distinct == 0 {
			return nil, res, bad(fmt.Errorf("%s: signed only by revoked keys: %s", name, revoked))
		}
		short = exitcode.New(exitcode.Unauthenticated,
			fmt.Errorf("envelope %s: %d of %d required distinct keys that the keyring or trust file holds signed it", name, res.Distinct, threshold),
			"cannot check: give the trust file or keyring that holds the envelope's signing key (--trust, --keyring)")
	}
	st, err := jsontree.Parse(payload, name+" payload")
	if err != nil {
		return nil, res, bad(err)
	}
	pr := jsontree.NewObjectReader(name+" payload", "", st, &perr)
	if t := pr.String("_type", true); perr == nil && t != statementType {
		pr.Fail("_type", fmt.Sprintf("want %q", statementType))
	}
	if t := pr.String("predicateType", true); perr == nil && t != PredicateType {
		pr.Fail("predicateType", fmt.Sprintf("want %q", PredicateType))
	}
	var digest string
	pr.Objects("subject", true, func(i int, sr *jsontree.ObjectReader) {
		sr.String("name", false)
		if d := sr.Object("digest", true); d != nil && i == 0 {
			digest = d.String("sha256", true)
			d.Done()
		}
		sr.Done()
	})
	pv := pr.Value("predicate")
	pr.Done()
	if perr != nil {
		return nil, res, bad(perr)
	}
	if pv == nil {
		return nil, res, bad(fmt.Errorf("%s: statement has no predicate", name))
	}
	var raw json.RawMessage
	if err := json.Unmarshal(payload, &struct {
		Predicate *json.RawMessage `json:"predicate"`
	}{&raw}); err != nil {
		return nil, res, bad(err)
	}
	s, err := Parse(raw, name+" predicate")
	if err != nil {
		return nil, res, err
	}
	if d, _ := s.Digest(); d != digest {
		return nil, res, bad(fmt.Errorf("%s: subject digest %s does not match the seal body digest %s", name, digest, d))
	}
	return s, res, short
}
