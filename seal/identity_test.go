package seal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// twinKeyring copies the keyring at path and files its first key a second
// time under id twin (inactive; revoked at revokedAt when not ""). It
// returns the new keyring and the first key's secret (hex, "" for OS keys).
func twinKeyring(t *testing.T, path, twin, revokedAt string) (*keyring.Keyring, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
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
	e["key_id"], e["active"] = twin, false
	if revokedAt != "" {
		e["revoked_at"] = revokedAt
	}
	doc.Keys = append(doc.Keys, e)
	out, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "twin.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	secret, _ := doc.Keys[0]["secret"].(string)
	return reopen(t, p), secret
}

// relabel returns a trust set listing every key of ts a second time under
// id+suffix.
func relabel(ts *trustSet, suffix, revokedAt string) *trustSet {
	out := &trustSet{Keys: append([]keyring.TrustedKey(nil), ts.Keys...)}
	for _, k := range ts.Keys {
		k.KeyID += suffix
		k.RevokedAt = revokedAt
		out.Keys = append(out.Keys, k)
	}
	return out
}

func sigValue(s *Sealed) (string, string) {
	alg, v, _ := splitSignature(s.Signature)
	return alg, v
}

// One signer must not meet a quorum of 2 by appearing under two labels.
// Each row is a label trick; every one must count 1 distinct signer and
// exit 1 (violation) at --quorum 2, with every signature verifying.
func TestQuorumCountsSignersNotLabels(t *testing.T) {
	ked, edPath := newKeyring(t, keyring.AlgEd25519)
	khm, hmPath := newKeyring(t, keyring.AlgHMAC)
	sed, _ := ked.ActiveSigner()
	shm, _ := khm.ActiveSigner()
	body := loadFixture(t).Body
	edSeal, _ := Sign(body, sed)
	hmSeal, _ := Sign(body, shm)
	trust := trustOf(t, ked)
	edTwin, _ := twinKeyring(t, edPath, "twin", "")
	hmTwin, hmSecret := twinKeyring(t, hmPath, "twin", "")

	// primary without key_id, the same signature again as a cosignature
	// with key_id (the reproduction)
	noKeyIDPlusCosig := func(s *Sealed) *Sealed {
		c := clone(s)
		alg, v := sigValue(s)
		c.KeyID = ""
		c.Cosignatures = []Cosignature{{KeyID: s.KeyID, Alg: alg, Sig: v}}
		return c
	}
	// the same signature filed under the key's two ids
	twoIDs := func(s *Sealed, other string) *Sealed {
		c := clone(s)
		alg, v := sigValue(s)
		c.Cosignatures = []Cosignature{{KeyID: other, Alg: alg, Sig: v}}
		return c
	}
	edTwoIDs := twoIDs(edSeal, sed.KeyID()+"-again")
	edTwoIDsPub := clone(edTwoIDs)
	edTwoIDsPub.Cosignatures[0].PublicKey = trust.Keys[0].PublicKey

	tests := []struct {
		name string
		s    *Sealed
		opts VerifyOptions
	}{
		{"ed25519: no key_id + cosignature, trust file", noKeyIDPlusCosig(edSeal), VerifyOptions{Trust: trust}},
		{"ed25519: no key_id + cosignature, keyring", noKeyIDPlusCosig(edSeal), VerifyOptions{Keyring: ked}},
		{"ed25519: no key_id + cosignature, keyring and trust file", noKeyIDPlusCosig(edSeal), VerifyOptions{Keyring: ked, Trust: trust}},
		{"ed25519: two key_ids, trust file lists the key twice", edTwoIDs, VerifyOptions{Trust: relabel(trust, "-again", "")}},
		{"ed25519: two key_ids with public_key, trust file lists the key twice", edTwoIDsPub, VerifyOptions{Trust: relabel(trust, "-again", "")}},
		{"ed25519: two key_ids, keyring files the key twice", twoIDs(edSeal, "twin"), VerifyOptions{Keyring: edTwin}},
		{"ed25519: one id in the keyring, another in the trust file", edTwoIDs, VerifyOptions{Keyring: ked, Trust: &trustSet{Keys: relabel(trust, "-again", "").Keys[1:]}}},
		{"hmac: no key_id + cosignature, keyring", noKeyIDPlusCosig(hmSeal), VerifyOptions{Keyring: khm}},
		{"hmac: no key_id (ATW_WITNESS_KEY) + cosignature (keyring)", noKeyIDPlusCosig(hmSeal), VerifyOptions{Keyring: khm, LegacyKeyHex: hmSecret}},
		{"hmac: two key_ids, keyring files the secret twice", twoIDs(hmSeal, "twin"), VerifyOptions{Keyring: hmTwin}},
		{"hmac: no key_id + two key_ids", func() *Sealed {
			c := noKeyIDPlusCosig(hmSeal)
			c.Cosignatures = append(c.Cosignatures, Cosignature{KeyID: "twin", Alg: c.Cosignatures[0].Alg, Sig: c.Cosignatures[0].Sig})
			return c
		}(), VerifyOptions{Keyring: hmTwin, LegacyKeyHex: hmSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Quorum = 2
			res, err := Verify(tt.s, opts)
			for _, c := range res.Checks {
				if c.Status != StatusOK {
					t.Fatalf("%s: %s %s, want every signature ok", c.Which, c.Status, c.Detail)
				}
			}
			if res.Distinct != 1 || exitcode.Of(err) != exitcode.Violation {
				t.Errorf("distinct %d, exit %v (%v); want 1 signer and a violation (%+v)", res.Distinct, exitcode.Of(err), err, res.Checks)
			}
			if !strings.Contains(res.Checks[len(res.Checks)-1].Detail, "same signer as signature") {
				t.Errorf("the repeated signer is not named: %+v", res.Checks)
			}
			// the control: at --quorum 1 the same seal is fine
			opts.Quorum = 1
			if _, err := Verify(tt.s, opts); err != nil {
				t.Errorf("quorum 1: %v", err)
			}
		})
	}

	// two genuinely different keys still count twice
	kb, _ := newKeyring(t, keyring.AlgEd25519)
	sb, _ := kb.ActiveSigner()
	two := clone(edSeal)
	if err := two.Cosign(sb); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(two, VerifyOptions{Trust: trustOf(t, ked, kb), Quorum: 2})
	if err != nil || res.Distinct != 2 {
		t.Errorf("two keys: distinct %d, %v", res.Distinct, err)
	}
	if res.Checks[0].Signer == res.Checks[1].Signer || !strings.HasPrefix(res.Checks[0].Signer, "ed25519:") {
		t.Errorf("signers %q %q", res.Checks[0].Signer, res.Checks[1].Signer)
	}
}

// Signer identities never print an HMAC secret.
func TestHMACIdentityHidesSecret(t *testing.T) {
	k, path := newKeyring(t, keyring.AlgHMAC)
	_, secret := twinKeyring(t, path, "twin", "")
	s, _ := k.ActiveSigner()
	sl, _ := Sign(loadFixture(t).Body, s)
	res, err := Verify(sl, VerifyOptions{Keyring: k})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	if secret == "" || strings.Contains(string(out), secret) || !strings.HasPrefix(res.Checks[0].Signer, "hmac-sha256:") {
		t.Errorf("result %s", out)
	}
}

// cosign refuses a key that already signed under another label.
func TestCosignRefusesSameKeyUnderAnotherLabel(t *testing.T) {
	ked, edPath := newKeyring(t, keyring.AlgEd25519)
	khm, hmPath := newKeyring(t, keyring.AlgHMAC)
	for _, tc := range []struct {
		name string
		k    *keyring.Keyring
		path string
	}{{"ed25519", ked, edPath}, {"hmac", khm, hmPath}} {
		t.Run(tc.name, func(t *testing.T) {
			signer, _ := tc.k.ActiveSigner()
			s, _ := Sign(loadFixture(t).Body, signer)
			tw, _ := twinKeyring(t, tc.path, "twin", "")
			twin, err := tw.Signer("twin")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Cosign(twin); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "already signed") {
				t.Errorf("twin of the primary key cosigned: %v", err)
			}
			noID := clone(s)
			noID.KeyID = ""
			if err := noID.Cosign(signer); exitcode.Of(err) != exitcode.Usage {
				t.Errorf("the primary key cosigned a seal that does not name it: %v", err)
			}
		})
	}
}

// Revocation wins: a key revoked in the keyring cannot vouch for a seal,
// whatever a trust file beside it (or another label in the keyring, or
// ATW_WITNESS_KEY) says.
func TestSealRevocationWinsOverTrustFile(t *testing.T) {
	ked, edPath := newKeyring(t, keyring.AlgEd25519)
	sed, _ := ked.ActiveSigner()
	edSeal, _ := Sign(loadFixture(t).Body, sed)
	trust := trustOf(t, ked) // exported before the revocation
	if _, err := keyring.Revoke(edPath, keyring.Options{}, sed.KeyID()); err != nil {
		t.Fatal(err)
	}
	revoked := reopen(t, edPath)
	otherID := &trustSet{Keys: relabel(trust, "-alias", "").Keys[1:]}

	khm, hmPath := newKeyring(t, keyring.AlgHMAC)
	shm, _ := khm.ActiveSigner()
	hmSeal, _ := Sign(loadFixture(t).Body, shm)
	// the same secret filed under "twin", unrevoked, and the original revoked
	if _, err := keyring.Revoke(hmPath, keyring.Options{}, shm.KeyID()); err != nil {
		t.Fatal(err)
	}
	hmTwin, hmSecret := twinKeyring(t, hmPath, "twin", "")
	var revokedAt string
	for _, e := range hmTwin.Entries() {
		if e.Revoked() {
			revokedAt = e.RevokedAt
		}
	}
	hmAsTwin := clone(hmSeal)
	hmAsTwin.KeyID = "twin"
	hmNoID := clone(hmSeal)
	hmNoID.KeyID = ""
	edNoID := clone(edSeal)
	edNoID.KeyID = ""
	edAlias := clone(edSeal)
	edAlias.KeyID = sed.KeyID() + "-alias"

	tests := []struct {
		name string
		s    *Sealed
		opts VerifyOptions
	}{
		{"trust file lists the key unrevoked, same id", edSeal, VerifyOptions{Keyring: revoked, Trust: trust}},
		{"trust file lists the key unrevoked, same id, no key_id", edNoID, VerifyOptions{Keyring: revoked, Trust: trust}},
		{"trust file lists the key unrevoked under another id", edAlias, VerifyOptions{Keyring: revoked, Trust: otherID}},
		{"trust file lists the key unrevoked under another id, no key_id", edNoID, VerifyOptions{Keyring: revoked, Trust: otherID}},
		{"trust file revokes, keyring does not", edSeal, VerifyOptions{Keyring: ked, Trust: relabel(trust, "-r", revokedAt)}},
		{"hmac: the same secret unrevoked under another id", hmAsTwin, VerifyOptions{Keyring: hmTwin}},
		{"hmac: the same secret unrevoked under another id, no key_id", hmNoID, VerifyOptions{Keyring: hmTwin}},
		{"hmac: ATW_WITNESS_KEY is a revoked key's secret", hmNoID, VerifyOptions{Keyring: hmTwin, LegacyKeyHex: hmSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Verify(tt.s, tt.opts)
			if exitcode.Of(err) != exitcode.Tampered || res.Checks[0].Status != StatusRevoked {
				t.Errorf("exit %v (%v), checks %+v; want revoked and tampered", exitcode.Of(err), err, res.Checks)
			}
			// with a quorum, the revoked signer counts zero
			q := tt.opts
			q.Quorum = 1
			if res, _ := Verify(tt.s, q); res.Distinct != 0 {
				t.Errorf("a revoked signer counted: %+v", res.Checks)
			}
		})
	}
}
