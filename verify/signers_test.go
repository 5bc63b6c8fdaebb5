package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/keyring"
)

// relabeled is a signer that files its signatures under another key id.
type relabeled struct {
	keyring.Signer
	id string
}

func (r relabeled) KeyID() string { return r.id }

// signedEnd is a minimal event log whose session_end carries one signature
// per signer.
func signedEnd(t *testing.T, signers ...eventlog.Signer) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{}, testTS, eventlog.SourceObserved)
	if err != nil {
		t.Fatal(err)
	}
	if err := eventlog.FinishWith(w, eventlog.EndOptions{Signers: signers, TS: testTS, Reason: "completed"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// newKeys generates a keyring with one key of alg.
func newKeys(t *testing.T, alg string) (*keyring.Keyring, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.json")
	if _, err := keyring.Generate(path, keyring.Options{}, alg); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.Open(path, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k, path
}

// twinOf copies the keyring at path and files its first key a second time
// under id "twin", inactive and not revoked (whatever the original says).
func twinOf(t *testing.T, path string) *keyring.Keyring {
	t.Helper()
	data, _ := os.ReadFile(path)
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	e := map[string]any{}
	for k, v := range doc.Keys[0] {
		e[k] = v
	}
	e["key_id"], e["revoked_at"], e["active"] = "twin", nil, false
	doc.Keys = append(doc.Keys, e)
	out, _ := json.Marshal(doc)
	tp := filepath.Join(t.TempDir(), "twin.json")
	if err := os.WriteFile(tp, out, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.Open(tp, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func exportTrust(t *testing.T, k *keyring.Keyring) *keyring.TrustSet {
	t.Helper()
	ts, err := k.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A session_end signed twice by one key under two labels is vouched for by
// one signer: the second signature is "duplicate", both name the same
// signer identity, and an honest second key stays "valid".
func TestEndSignaturesCountSigners(t *testing.T) {
	for _, alg := range []string{keyring.AlgHMAC, keyring.AlgEd25519} {
		t.Run(alg, func(t *testing.T) {
			orig, path := newKeys(t, alg)
			twin := twinOf(t, path)
			s, _ := orig.ActiveSigner()
			verifiers := map[string]eventlog.SignatureVerifier{"keyring": EndVerifier(twin, nil)}
			if alg == keyring.AlgEd25519 {
				trust := exportTrust(t, orig)
				alias := trust.Keys[0]
				alias.KeyID = "twin"
				trust.Keys = append(trust.Keys, alias)
				verifiers["trust file"] = EndVerifier(nil, trust)
				verifiers["keyring + trust file under another id"] = EndVerifier(orig, &keyring.TrustSet{Keys: []keyring.TrustedKey{alias}})
			}
			for name, v := range verifiers {
				for _, labels := range [][2]string{{s.KeyID(), "twin"}, {s.KeyID(), ""}} {
					log := signedEnd(t, s, relabeled{s, labels[1]})
					rep, err := eventlog.VerifyLog(bytes.NewReader(log), "events.jsonl", eventlog.VerifyLogOptions{Verifier: v})
					if err != nil {
						t.Fatalf("%s %q: %v", name, labels, err)
					}
					sg := rep.Signatures
					if len(sg) != 2 || sg[0].Status != "valid" || sg[1].Status != "duplicate" || sg[0].Signer == "" || sg[0].Signer != sg[1].Signer {
						t.Errorf("%s %q: %+v, want valid then duplicate by one signer", name, labels, sg)
					}
				}
			}
			// two different keys: two valid signers
			other, _ := newKeys(t, alg)
			so, _ := other.ActiveSigner()
			log := signedEnd(t, s, so)
			rep, _ := eventlog.VerifyLog(bytes.NewReader(log), "events.jsonl", eventlog.VerifyLogOptions{Verifier: EndVerifier(orig, nil)})
			if rep.Signatures[0].Status != "valid" || rep.Signatures[1].Status != "unknown_key" {
				t.Errorf("other key: %+v", rep.Signatures)
			}
		})
	}
}

// Revocation wins: a key revoked in the keyring cannot vouch for a log
// end, whatever a trust file given beside it says (the same public key
// unrevoked under the same or another id), nor under a second id in the
// keyring itself.
func TestEndRevocationWinsOverTrustFile(t *testing.T) {
	orig, path := newKeys(t, keyring.AlgEd25519)
	s, _ := orig.ActiveSigner()
	trust := exportTrust(t, orig) // exported before the revocation
	if _, err := keyring.Revoke(path, keyring.Options{}, s.KeyID()); err != nil {
		t.Fatal(err)
	}
	revoked, err := keyring.Open(path, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alias := trust.Keys[0]
	alias.KeyID = "alias"
	aliasTrust := &keyring.TrustSet{Keys: []keyring.TrustedKey{alias}}
	hk, hmPath := newKeys(t, keyring.AlgHMAC)
	hs, _ := hk.ActiveSigner()
	if _, err := keyring.Revoke(hmPath, keyring.Options{}, hs.KeyID()); err != nil {
		t.Fatal(err)
	}
	// the revoked key, and the same secret filed again unrevoked
	hmRevokedTwin := twinOf(t, hmPath)

	tests := []struct {
		name   string
		v      eventlog.SignatureVerifier
		signer eventlog.Signer
	}{
		{"trust file lists it unrevoked, same id", EndVerifier(revoked, trust), s},
		{"trust file lists it unrevoked, same id, signature without key id", EndVerifier(revoked, trust), relabeled{s, ""}},
		{"trust file lists it unrevoked under another id", EndVerifier(revoked, aliasTrust), relabeled{s, "alias"}},
		{"hmac: the same secret unrevoked under another id", EndVerifier(hmRevokedTwin, nil), relabeled{hs, "twin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := signedEnd(t, tt.signer)
			rep, err := eventlog.VerifyLog(bytes.NewReader(log), "events.jsonl", eventlog.VerifyLogOptions{Verifier: tt.v})
			if err == nil || rep.Status != eventlog.StatusUnsigned || rep.Signatures[0].Status != "unknown_key" || !strings.Contains(rep.Signatures[0].Detail, "revoked") {
				t.Errorf("status %s, %+v, err %v; want a revoked key that vouches for nothing", rep.Status, rep.Signatures, err)
			}
		})
	}
	rep, err := eventlog.VerifyLog(bytes.NewReader(signedEnd(t, relabeled{s, "alias"})), "events.jsonl", eventlog.VerifyLogOptions{Verifier: EndVerifier(orig, aliasTrust)})
	if err != nil || rep.Status != eventlog.StatusOK {
		t.Errorf("control (not revoked): %s %v", rep.Status, err)
	}
}
