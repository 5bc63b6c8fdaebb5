package seal

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// An independent DSSE implementation (go-securesystemslib) verifies the
// envelope witness writes, and the payload is an in-toto Statement v1
// whose subject digest is the seal body's sha256.
func TestEnvelopeVerifiesWithSecureSystemsLib(t *testing.T) {
	k, _ := newKeyring(t, keyring.AlgEd25519)
	signer, _ := k.ActiveSigner()
	s, err := Sign(loadFixture(t).Body, signer)
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewEnvelope(s, "seal.json", signer)
	if err != nil {
		t.Fatal(err)
	}
	line, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(line), "\n") != 1 || !strings.HasSuffix(string(line), "\n") {
		t.Errorf("envelope is not one JSON line")
	}

	var theirs dsse.Envelope
	if err := json.Unmarshal(line, &theirs); err != nil {
		t.Fatal(err)
	}
	pub, _ := base64.StdEncoding.DecodeString(signer.(keyring.PublicKeyer).PublicKey())
	sv, err := signerverifier.NewED25519SignerVerifierFromSSLibKey(&signerverifier.SSLibKey{
		KeyType: "ed25519", Scheme: "ed25519", KeyID: signer.KeyID(),
		KeyVal: signerverifier.KeyVal{Public: hex.EncodeToString(pub)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dsse.NewEnvelopeVerifier(sv)
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := ev.Verify(context.Background(), &theirs)
	if err != nil {
		t.Fatalf("go-securesystemslib/dsse refuses the envelope: %v", err)
	}
	if len(accepted) != 1 {
		t.Fatalf("accepted %d keys", len(accepted))
	}

	payload, _ := theirs.DecodeB64Payload()
	var st struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate map[string]any `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	digest, _ := s.Digest()
	if st.Type != statementType || st.PredicateType != PredicateType || len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != digest {
		t.Errorf("statement %+v", st)
	}
	if st.Predicate["signature"] != s.Signature || st.Predicate["key_id"] != s.KeyID {
		t.Errorf("predicate does not carry the seal: %v", st.Predicate)
	}

	// Our own verifier agrees and returns the seal from the verified bytes.
	trust, _ := k.ExportTrust()
	got, err := VerifyEnvelope(line, "seal.intoto.jsonl", trust)
	if err != nil {
		t.Fatal(err)
	}
	if got.Signature != s.Signature {
		t.Errorf("seal from envelope differs")
	}

	// A changed payload fails both verifiers.
	st2 := strings.Replace(string(payload), "witness-fixture-1", "witness-fixture-2", -1)
	theirs.Payload = base64.StdEncoding.EncodeToString([]byte(st2))
	if _, err := ev.Verify(context.Background(), &theirs); err == nil {
		t.Error("go-securesystemslib accepted a changed payload")
	}
	changed, _ := json.Marshal(theirs)
	if _, err := VerifyEnvelope(changed, "x", trust); err == nil {
		t.Error("VerifyEnvelope accepted a changed payload")
	}
}

func TestEnvelopeNeedsEd25519(t *testing.T) {
	k, _ := newKeyring(t, keyring.AlgHMAC)
	signer, _ := k.ActiveSigner()
	s, _ := Sign(loadFixture(t).Body, signer)
	if _, err := NewEnvelope(s, "seal.json", signer); err == nil {
		t.Error("an HMAC key signed a DSSE envelope")
	}
}

func TestPAE(t *testing.T) {
	// DSSE protocol.md example: PAE("http://example.com/HelloWorld", "hello world")
	got := string(pae("http://example.com/HelloWorld", []byte("hello world")))
	want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
	if got != want || string(dsse.PAE("http://example.com/HelloWorld", []byte("hello world"))) != want {
		t.Errorf("PAE = %q", got)
	}
}

// envelopeFor signs the fixture seal and wraps it in an envelope signed by
// signers (the first one also signs the seal).
func envelopeFor(t *testing.T, signers ...keyring.Signer) (*Sealed, map[string]any, []byte) {
	t.Helper()
	s, err := Sign(loadFixture(t).Body, signers[0])
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewEnvelope(s, "seal.json", signers[0])
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	for _, sg := range signers[1:] {
		sig, err := sg.Sign(pae(payloadType, payload))
		if err != nil {
			t.Fatal(err)
		}
		env.Signatures = append(env.Signatures, EnvelopeS{KeyID: sg.KeyID(), Sig: sig})
	}
	b, _ := json.Marshal(env)
	var m map[string]any
	json.Unmarshal(b, &m)
	return s, m, payload
}

func marshal(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sigsOf(m map[string]any) []any { return m["signatures"].([]any) }

// The DSSE spec: payload and sigs in standard or URL-safe base64, padded
// or not; signatures by unknown keys are skipped; the threshold counts
// distinct verified keys (key material).
func TestEnvelopeDSSESpec(t *testing.T) {
	k, _ := newKeyring(t, keyring.AlgEd25519)
	signer, _ := k.ActiveSigner()
	stranger, _ := newKeyring(t, keyring.AlgEd25519)
	strangerSigner, _ := stranger.ActiveSigner()
	trust, _ := k.ExportTrust()

	// every base64 spelling of payload and sig verifies
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		s, m, payload := envelopeFor(t, signer)
		sig0 := sigsOf(m)[0].(map[string]any)
		raw, _ := base64.StdEncoding.DecodeString(sig0["sig"].(string))
		sig0["sig"] = enc.EncodeToString(raw)
		m["payload"] = enc.EncodeToString(payload)
		got, res, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: trust})
		if err != nil || got == nil || got.Signature != s.Signature || res.Distinct != 1 {
			t.Errorf("encoding %v: %v, %+v", enc, err, res)
		}
	}
	// a payload that needs URL-safe characters and has them is accepted;
	// a line break is not
	_, m, _ := envelopeFor(t, signer)
	m["payload"] = m["payload"].(string)[:8] + "\n" + m["payload"].(string)[8:]
	if _, _, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: trust}); exitcode.Of(err) != exitcode.Tampered {
		t.Errorf("line break in payload: %v", err)
	}

	// an unknown key's signature is skipped, before or after ours
	_, m, _ = envelopeFor(t, signer, strangerSigner)
	sigs := sigsOf(m)
	for _, order := range [][]any{sigs, {sigs[1], sigs[0]}} {
		m["signatures"] = order
		got, res, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: trust})
		if err != nil || got == nil || res.Distinct != 1 {
			t.Errorf("unknown key not skipped: %v %+v", err, res)
		}
		unknown := 0
		for _, c := range res.Checks {
			if c.Status == statusUnknown {
				unknown++
			}
		}
		if unknown != 1 {
			t.Errorf("checks %+v", res.Checks)
		}
	}
	// only unknown keys: unauthenticated (cannot check), the seal returned
	_, m, _ = envelopeFor(t, strangerSigner)
	got, _, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: trust})
	if exitcode.Of(err) != exitcode.Unauthenticated || got == nil {
		t.Errorf("only unknown keys: %v (exit %v)", err, exitcode.Of(err))
	}
	// a held key whose signature does not verify: tampered, even beside a good one
	_, m, _ = envelopeFor(t, signer, signer)
	bad := sigsOf(m)[1].(map[string]any)
	raw, _ := base64.StdEncoding.DecodeString(bad["sig"].(string))
	raw[0] ^= 1
	bad["sig"] = base64.StdEncoding.EncodeToString(raw)
	if _, _, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: trust}); exitcode.Of(err) != exitcode.Tampered {
		t.Errorf("bad signature by a held key: %v", err)
	}

	// one key under two keyids counts once: threshold 2 is not met
	_, m, _ = envelopeFor(t, signer, signer)
	second := sigsOf(m)[1].(map[string]any)
	second["keyid"] = "alias"
	twice := &keyring.TrustSet{Keys: append(append([]keyring.TrustedKey(nil), trust.Keys...), trust.Keys[0])}
	twice.Keys[1].KeyID = "alias"
	_, res, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: twice, Threshold: 2})
	if exitcode.Of(err) != exitcode.Unauthenticated || res == nil || res.Distinct != 1 {
		t.Errorf("one key twice met threshold 2: %v %+v", err, res)
	}
	// two distinct held keys meet it
	both := &keyring.TrustSet{Keys: append(append([]keyring.TrustedKey(nil), trust.Keys...), mustTrust(t, stranger).Keys...)}
	_, m, _ = envelopeFor(t, signer, strangerSigner)
	if _, res, err := VerifyEnvelopeWith(marshal(t, m), "e", EnvelopeOptions{Trust: both, Threshold: 2}); err != nil || res.Distinct != 2 {
		t.Errorf("two keys: %v %+v", err, res)
	}
}

func mustTrust(t *testing.T, k *keyring.Keyring) *keyring.TrustSet {
	t.Helper()
	ts, err := k.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
