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
	if st.Type != StatementType || st.PredicateType != PredicateType || len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != digest {
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
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
	if got != want || string(dsse.PAE("http://example.com/HelloWorld", []byte("hello world"))) != want {
		t.Errorf("PAE = %q", got)
	}
}
