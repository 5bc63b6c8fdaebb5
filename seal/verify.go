package seal

import (
	"errors"
	"fmt"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// trustSet is a set of trusted public keys (see keyring.TrustSet).
type trustSet = keyring.TrustSet

// VerifyOptions give the keys to verify with. At least one of Keyring,
// Trust and LegacyKeyHex must be set.
type VerifyOptions struct {
	// Keyring verifies HMAC signatures (secrets) and Ed25519 signatures
	// (public keys) of its keys.
	Keyring *keyring.Keyring
	// Trust verifies Ed25519 signatures with public keys alone.
	Trust *trustSet
	// Quorum, when > 0, requires at least this many distinct trusted keys
	// to have signed the exact body (primary signature and cosignatures;
	// one key counts once however often and under whatever labels it
	// signed: signers are told apart by key material, not key ids).
	Quorum int
	// LegacyKeyHex is an ATW_WITNESS_KEY value, used for HMAC signatures
	// without key_id (0.1.0 seals). Keys of 16-31 bytes are accepted for
	// verifying (with a warning in the check detail).
	LegacyKeyHex string
}

// Check statuses.
const (
	StatusOK      = "ok"          // verified with a trusted key
	StatusBad     = "bad"         // a known key, but the signature does not match the body
	StatusRevoked = "revoked"     // made by a revoked key
	statusUnknown = "unknown-key" // no key to check it with
)

// Check is the outcome for one signature.
type Check struct {
	Which  string `json:"which"` // "signature" or "cosignatures[i]"
	KeyID  string `json:"key_id,omitempty"`
	Alg    string `json:"alg"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Signer is the identity of the key that verified the signature (see
	// keyring.Ed25519Identity and keyring.HMACIdentity); "" unless ok.
	Signer string `json:"signer,omitempty"`
}

// Result is the outcome of Verify.
type Result struct {
	SealRef  string        `json:"seal_ref"`
	Checks   []Check       `json:"checks"`
	Quorum   int           `json:"quorum,omitempty"`
	Distinct int           `json:"distinct_trusted_signers"`
	Code     exitcode.Code `json:"-"`
	Verdict  string        `json:"verdict"` // ok | violation | tampered | unauthenticated
	Reason   string        `json:"reason"`
}

// Verify checks the seal's signatures against the given keys. It returns
// the result and, when the verdict is not ok, an error carrying the exit
// code: Tampered when a signature does not verify (the body or signature
// was changed) or was made by a revoked key; Unauthenticated when the
// primary signature cannot be checked with the keys given (cannot check:
// a key neither the keyring nor the trust file holds); Violation when
// every signature is intact but fewer than Quorum distinct trusted keys
// signed.
//
// The steps, each checkable on its own: a key must be given
// (requireKey); every signature is checked against the canonical body
// (newSignatureChecker, checkPrimary, checkCosignature); signers are
// counted by key material (countSigners); then the verdict: any bad
// signature is tampering (rejectBad), and otherwise the quorum
// (quorumVerdict) or the primary signature (primaryVerdict) decides.
func Verify(s *Sealed, opts VerifyOptions) (*Result, error) {
	res := &Result{SealRef: s.Ref(), Quorum: opts.Quorum}
	if err := requireKey(opts); err != nil {
		return res, err
	}
	msg, err := s.canonicalBody()
	if err != nil {
		return res, exitcode.New(exitcode.Tampered, fmt.Errorf("encode seal body: %w", err), "")
	}
	sc, err := newSignatureChecker(msg, opts)
	if err != nil {
		return res, err
	}
	res.Checks = append(res.Checks, sc.checkPrimary(s))
	for i, cs := range s.Cosignatures {
		res.Checks = append(res.Checks, sc.checkCosignature(i, cs))
	}
	res.Distinct = countSigners(res.Checks)
	if err := rejectBad(res); err != nil {
		return res, err
	}
	if opts.Quorum > 0 {
		return quorumVerdict(res, opts.Quorum)
	}
	return primaryVerdict(res)
}

// requireKey guarantees that no verdict is reached without a key to check
// with: with neither keyring, trust set nor legacy key it is a usage error.
func requireKey(opts VerifyOptions) error {
	if opts.Keyring == nil && opts.Trust == nil && opts.LegacyKeyHex == "" {
		return exitcode.New(exitcode.Usage, errors.New("no key to verify the seal with"),
			"pass --keyring (or set WITNESS_KEYRING), --trust FILE, or set ATW_WITNESS_KEY")
	}
	return nil
}

// signatureChecker checks signatures over one canonical seal body with the
// keys of one VerifyOptions.
type signatureChecker struct {
	v          *keyring.Verifier
	msg        []byte // the canonical body every signature must cover
	legacyWarn string // a short legacy key, noted in the detail of what it verified
}

// newSignatureChecker builds the checker for msg. A legacy key that does
// not parse (or is shorter than keyring.MinLegacyVerifyBytes) is an error
// before any signature is looked at.
func newSignatureChecker(msg []byte, opts VerifyOptions) (*signatureChecker, error) {
	sc := &signatureChecker{msg: msg}
	var legacyKey []byte
	if opts.LegacyKeyHex != "" {
		var err error
		legacyKey, err = keyring.ParseLegacyKey(opts.LegacyKeyHex, keyring.MinLegacyVerifyBytes)
		if err != nil {
			return nil, err
		}
		if len(legacyKey) < keyring.SecretSize {
			sc.legacyWarn = fmt.Sprintf("legacy key is only %d bytes (32 recommended)", len(legacyKey))
		}
	}
	sc.v = keyring.NewVerifier(opts.Keyring, opts.Trust, legacyKey)
	return sc, nil
}

// check classifies one signature over the body: ok only when a trusted,
// unrevoked key verifies it (Signer is then that key's identity); revoked,
// bad (a known key, wrong signature) or unknown-key otherwise.
func (sc *signatureChecker) check(which, keyID, alg, value string) Check {
	signed, err := sc.v.Check(keyID, alg, sc.msg, value)
	c := Check{Which: which, KeyID: keyID, Alg: alg}
	switch {
	case err == nil:
		c.Status, c.Detail, c.Signer = StatusOK, "verified with "+signed.Source, signed.Identity
		if signed.KeyID != "" && signed.KeyID != keyID {
			c.Detail += " key " + signed.KeyID
		}
		if signed.Source == keyring.SourceLegacy && sc.legacyWarn != "" {
			c.Detail += "; " + sc.legacyWarn
		}
	case errors.Is(err, keyring.ErrRevoked):
		c.Status, c.Detail = StatusRevoked, err.Error()
	case errors.Is(err, keyring.ErrBadSignature):
		c.Status, c.Detail = StatusBad, err.Error()
	default:
		c.Status, c.Detail = statusUnknown, err.Error()
	}
	return c
}

// checkPrimary checks the seal's own signature; an algorithm other than
// HMAC-SHA256 and Ed25519 is bad, never unknown.
func (sc *signatureChecker) checkPrimary(s *Sealed) Check {
	alg, value, _ := splitSignature(s.Signature)
	if alg != algHMACSHA256 && alg != algEd25519 {
		return Check{Which: "signature", KeyID: s.KeyID, Alg: alg, Status: StatusBad, Detail: fmt.Sprintf("unknown signature algorithm %q", alg)}
	}
	return sc.check("signature", s.KeyID, alg, value)
}

// checkCosignature checks cosignature i; one that verifies but names a
// public_key other than the trusted key that verified it is bad.
func (sc *signatureChecker) checkCosignature(i int, cs Cosignature) Check {
	c := sc.check(fmt.Sprintf("cosignatures[%d]", i), cs.KeyID, cs.Alg, cs.Sig)
	if c.Status == StatusOK && cs.PublicKey != "" {
		if id, err := keyring.Ed25519Identity(cs.PublicKey); err != nil || id != c.Signer {
			c.Status, c.Detail, c.Signer = StatusBad, "public_key in the cosignature differs from the trusted key that verified it", ""
		}
	}
	return c
}

// countSigners returns how many distinct keys made the ok checks. A signer
// is its key material: the same key under two labels (with and without
// key_id, two key ids) counts once, and its later checks say so.
func countSigners(checks []Check) int {
	n := 0
	first := map[string]string{}
	for i := range checks {
		c := &checks[i]
		if c.Status != StatusOK {
			continue
		}
		if w, dup := first[c.Signer]; dup {
			c.Detail += "; same signer as " + w + ", counted once"
			continue
		}
		first[c.Signer] = c.Which
		n++
	}
	return n
}

// rejectBad makes any signature that does not verify under a known key
// (the primary or a cosignature) tampering, whatever the quorum.
func rejectBad(res *Result) error {
	for _, c := range res.Checks {
		if c.Status == StatusBad {
			_, err := fail(res, exitcode.Tampered, fmt.Sprintf("%s (key %s) does not verify: the seal body or signature was changed", c.Which, orNone(c.KeyID)),
				"the seal was altered after signing; get the original seal from its author")
			return err
		}
	}
	return nil
}

// quorumVerdict is ok when at least quorum distinct trusted keys signed,
// and a violation (intact evidence, policy not met) otherwise.
func quorumVerdict(res *Result, quorum int) (*Result, error) {
	if res.Distinct < quorum {
		return fail(res, exitcode.Violation, fmt.Sprintf("quorum not met: %d of %d required distinct trusted keys signed this body", res.Distinct, quorum),
			"collect more cosignatures with 'witness cosign SEAL --keyring OTHER', and put their public keys in the trust file")
	}
	res.Verdict, res.Code = "ok", exitcode.OK
	res.Reason = fmt.Sprintf("quorum met: %d distinct trusted keys signed this body (need %d)", res.Distinct, quorum)
	return res, nil
}

// primaryVerdict, without a quorum, is ok only when the primary signature
// verified; revoked is tampering; unknown-key is unauthenticated: nothing
// shows the seal was altered, the verifier lacks the key to check it.
func primaryVerdict(res *Result) (*Result, error) {
	p := res.Checks[0]
	switch p.Status {
	case StatusOK:
		res.Verdict, res.Code = "ok", exitcode.OK
		res.Reason = "seal signature verifies"
		if p.KeyID != "" {
			res.Reason += " (key " + p.KeyID + ")"
		}
		return res, nil
	case StatusRevoked:
		return fail(res, exitcode.Tampered, "seal signature: "+p.Detail, "a revoked key's signatures are no longer trusted; re-seal with the active key")
	}
	return fail(res, exitcode.Unauthenticated, "seal signature cannot be checked: "+p.Detail,
		"verify with the keyring or trust file that holds the signing key (--keyring, --trust), or ATW_WITNESS_KEY for 0.1.0 seals")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func fail(res *Result, code exitcode.Code, reason, hint string) (*Result, error) {
	res.Code = code
	res.Verdict = code.Name()
	res.Reason = reason
	return res, exitcode.New(code, errors.New(reason), hint)
}
