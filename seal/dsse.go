package seal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
)

// in-toto / DSSE constants.
const (
	// PayloadType is the DSSE payload type of in-toto statements.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
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

// PAE is DSSE's pre-authentication encoding:
// "DSSEv1" SP len(type) SP type SP len(body) SP body.
func PAE(payloadType string, payload []byte) []byte {
	b := []byte("DSSEv1 ")
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// Statement returns the in-toto Statement v1 for the seal, as canonical
// JSON: one subject named name whose sha256 digest is the digest of the
// canonical seal body, and the whole seal file content as the predicate.
func Statement(s *Sealed, name string) ([]byte, error) {
	digest, err := s.Digest()
	if err != nil {
		return nil, err
	}
	pred, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	st := map[string]any{
		"_type":         StatementType,
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
			"rotate to an Ed25519 key ('witness rotate-key --alg ed25519') or use a keyring made with 'witness keygen --alg ed25519'")
	}
	payload, err := Statement(s, name)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("build in-toto statement: %w", err), "")
	}
	sig, err := signer.Sign(PAE(PayloadType, payload))
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("sign DSSE envelope: %w", err), "")
	}
	return &Envelope{
		PayloadType: PayloadType,
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

// VerifyEnvelope checks a DSSE envelope's signatures with the trusted keys
// (at least one must verify, none may fail) and returns the seal it
// carries, parsed from the verified payload bytes.
func VerifyEnvelope(data []byte, name string, trust *TrustSet) (*Sealed, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("envelope %w", err), "")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
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
		return nil, bad(perr)
	}
	if env.PayloadType != PayloadType {
		return nil, bad(fmt.Errorf("%s: payloadType %q, want %q", name, env.PayloadType, PayloadType))
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(env.Payload)
	if err != nil {
		return nil, bad(fmt.Errorf("%s: payload is not standard base64", name))
	}
	if len(env.Signatures) == 0 {
		return nil, bad(fmt.Errorf("%s: no signatures", name))
	}
	pae := PAE(env.PayloadType, payload)
	for _, sg := range env.Signatures {
		if err := trust.Verify(sg.KeyID, keyring.SigEd25519, pae, sg.Sig); err != nil {
			return nil, bad(fmt.Errorf("%s: signature by %s: %w", name, orNone(sg.KeyID), err))
		}
	}
	st, err := jsontree.Parse(payload, name+" payload")
	if err != nil {
		return nil, bad(err)
	}
	pr := jsontree.NewObjectReader(name+" payload", "", st, &perr)
	if t := pr.String("_type", true); perr == nil && t != StatementType {
		pr.Fail("_type", fmt.Sprintf("want %q", StatementType))
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
		return nil, bad(perr)
	}
	if pv == nil {
		return nil, bad(fmt.Errorf("%s: statement has no predicate", name))
	}
	var raw json.RawMessage
	if err := json.Unmarshal(payload, &struct {
		Predicate *json.RawMessage `json:"predicate"`
	}{&raw}); err != nil {
		return nil, bad(err)
	}
	s, err := Parse(raw, name+" predicate")
	if err != nil {
		return nil, err
	}
	if d, _ := s.Digest(); d != digest {
		return nil, bad(fmt.Errorf("%s: subject digest %s does not match the seal body digest %s", name, digest, d))
	}
	return s, nil
}
