package keyring

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// A keys.json as 0.1.0 writes it (spec §3.1): indent 2, sorted keys,
// trailing newline.
const v010Keys = `{
  "keys": [
    {
      "active": false,
      "algorithm": "hmac",
      "created_at": "2026-09-01T00:00:00.000001Z",
      "key_id": "2026-09-01T00:00:00.000001Z",
      "revoked_at": null,
      "secret": "0000000000000000000000000000000000000000000000000000000000000000"
    },
    {
      "active": true,
      "algorithm": "hmac",
      "created_at": "2026-09-01T00:00:01.000002Z",
      "key_id": "2026-09-01T00:00:01.000002Z",
      "revoked_at": null,
      "secret": "1111111111111111111111111111111111111111111111111111111111111111"
    }
  ]
}
`

func TestParseAndMarshal010Schema(t *testing.T) {
	entries, err := Parse([]byte(v010Keys), "keys.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1].KeyID != "2026-09-01T00:00:01.000002Z" || !entries[1].Active || entries[0].Active {
		t.Fatalf("entries %+v", entries)
	}
	out, err := marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v010Keys, string(out)); diff != "" {
		t.Errorf("re-written keyring differs from 0.1.0's bytes (-0.1.0 +go):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	// 0.1.0 load: {} is an empty keyring; active defaults to false and
	// revoked_at to null.
	for _, in := range []string{`{}`, `{"keys":[]}`} {
		e, err := Parse([]byte(in), "k")
		if err != nil || len(e) != 0 {
			t.Errorf("Parse(%s) = %v, %v", in, e, err)
		}
	}
	e, err := Parse([]byte(`{"keys":[{"key_id":"a","algorithm":"hmac","created_at":"a","secret":"`+strings.Repeat("ab", 32)+`"}]}`), "k")
	if err != nil || e[0].Active || e[0].Revoked() {
		t.Errorf("defaults: %+v %v", e, err)
	}
}

func TestParseRefuses(t *testing.T) {
	sec := strings.Repeat("ab", 32)
	entry := func(extra string) string {
		return `{"keys":[{"active":true,"algorithm":"hmac","created_at":"c","key_id":"k","revoked_at":null,"secret":"` + sec + `"` + extra + `}]}`
	}
	tests := []struct{ name, in, want string }{
		{"unknown field", entry(`,"note":"x"`), "keys[0].note: unknown field"},
		{"unknown top field", `{"keys":[],"version":2}`, "version: unknown field"},
		{"short secret", strings.Replace(entry(""), sec, "abcd", 1), "exactly 32 bytes"},
		{"non-hex secret", strings.Replace(entry(""), sec, strings.Repeat("zz", 32), 1), "not hex"},
		{"unknown algorithm", strings.Replace(entry(""), `"hmac"`, `"rsa"`, 1), `unknown algorithm "rsa"`},
		{"empty key_id", strings.Replace(entry(""), `"key_id":"k"`, `"key_id":""`, 1), "key_id: must be non-empty"},
		{"duplicate key_id", `{"keys":[` + strings.TrimSuffix(strings.TrimPrefix(entry(""), `{"keys":[`), `]}`) + `,` + strings.TrimSuffix(strings.TrimPrefix(entry(""), `{"keys":[`), `]}`) + `]}`, `duplicate key_id "k"`},
		{"missing secret", strings.Replace(entry(""), `,"secret":"`+sec+`"`, ``, 1), "secret: missing"},
		{"os entry with secret", entry(`,"backend":"os"`), "present in an os-backend entry"},
		{"ed25519 without public key", strings.Replace(entry(""), `"hmac"`, `"ed25519"`, 1), "public_key: missing"},
		{"hmac with public key", entry(`,"public_key":"AAAA"`), "an hmac key has no public key"},
		{"active not bool", strings.Replace(entry(""), `"active":true`, `"active":"true"`, 1), "active: want a boolean"},
		{"not JSON", `{"keys":[`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "keys.json")
			if err == nil {
				t.Fatalf("parsed %s", tt.in)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "keys.json:") {
				t.Errorf("error %q, want file, line and %q", err, tt.want)
			}
			if exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit %v", exitcode.Of(err))
			}
		})
	}
}

func TestEd25519PublicKeyMustMatchSeed(t *testing.T) {
	k := tempKeyring(t, AlgEd25519)
	data, _ := os.ReadFile(k)
	entries, _ := Parse(data, "k")
	other := tempKeyring(t, AlgEd25519)
	od, _ := os.ReadFile(other)
	oe, _ := Parse(od, "o")
	bad := strings.Replace(string(data), entries[0].PublicKey, oe[0].PublicKey, 1)
	if _, err := Parse([]byte(bad), "k"); err == nil || !strings.Contains(err.Error(), "does not match the secret") {
		t.Errorf("mismatched public key: %v", err)
	}
}

func tempKeyring(t *testing.T, alg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.json")
	if _, err := Generate(p, Options{}, alg); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGenerateWrites0600AndRefusesSecondActive(t *testing.T) {
	for _, alg := range []string{AlgHMAC, AlgEd25519} {
		p := filepath.Join(t.TempDir(), "sub", "keys.json")
		e, err := Generate(p, Options{}, alg)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", alg, st.Mode().Perm())
		}
		k, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, err := k.Active()
		if err != nil || a.KeyID != e.KeyID || a.Algorithm != alg {
			t.Errorf("active %+v %v", a, err)
		}
		if alg == AlgHMAC && !strings.HasSuffix(e.KeyID, "Z") {
			t.Errorf("hmac key id %q is not a 0.1.0 timestamp", e.KeyID)
		}
		if alg == AlgEd25519 && (!strings.HasPrefix(e.KeyID, "ed25519-") || e.PublicKey == "") {
			t.Errorf("ed25519 entry %+v", e)
		}
		before, _ := os.ReadFile(p)
		if _, err := Generate(p, Options{}, alg); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "already has an active key") {
			t.Errorf("second keygen: %v", err)
		}
		after, _ := os.ReadFile(p)
		if !bytes.Equal(before, after) {
			t.Error("a refused keygen changed the file")
		}
	}
}

func TestOpenRefusesGroupOrOtherAccess(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		os.Chmod(p, mode)
		_, err := Open(p, Options{})
		if err == nil {
			t.Errorf("mode %o accepted", mode)
			continue
		}
		if exitcode.HintOf(err) != "chmod 600 "+p {
			t.Errorf("mode %o: hint %q", mode, exitcode.HintOf(err))
		}
	}
	os.Chmod(p, 0o600)
	if _, err := Open(p, Options{}); err != nil {
		t.Errorf("0600 refused: %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

func TestRotateFailureLeavesKeyringUnchanged(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	before, _ := os.ReadFile(p)
	tests := []struct {
		name string
		opts Options
		alg  string
	}{
		{"key generation fails", Options{Rand: failingReader{}}, ""},
		{"same microsecond every time (key id collision)", Options{Now: func() time.Time {
			k, _ := Open(p, Options{})
			a, _ := k.Active()
			ts, _ := time.Parse(keyTimeFormat, a.KeyID)
			return ts
		}}, ""},
		{"OS keyring refuses the new secret", Options{Backend: BackendOS, OS: &memStore{failSet: errors.New("locked collection")}}, ""},
		{"unknown algorithm", Options{}, "rsa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Rotate(p, tt.opts, tt.alg); err == nil {
				t.Fatal("rotation succeeded")
			}
			after, _ := os.ReadFile(p)
			if !bytes.Equal(before, after) {
				t.Fatal("failed rotation changed the keyring")
			}
			k, _ := Open(p, Options{})
			if _, err := k.Active(); err != nil {
				t.Errorf("no active key after a failed rotation: %v", err)
			}
		})
	}
}

func TestRotateKeepsOldKeyForVerification(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	k, _ := Open(p, Options{})
	s1, _ := k.ActiveSigner()
	msg := []byte("body")
	sig1, _ := s1.Sign(msg)
	old, created, err := Rotate(p, Options{}, AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	if old.KeyID != s1.KeyID() || old.Active || !created.Active || created.Algorithm != AlgEd25519 {
		t.Errorf("old %+v new %+v", old, created)
	}
	k, _ = Open(p, Options{})
	if err := k.Verify(s1.KeyID(), SigHMACSHA256, msg, sig1); err != nil {
		t.Errorf("old key no longer verifies: %v", err)
	}
	if err := k.Verify("", SigHMACSHA256, msg, sig1); err != nil {
		t.Errorf("try-all misses the old key: %v", err)
	}
	s2, _ := k.ActiveSigner()
	if s2.KeyID() != created.KeyID || s2.Algorithm() != SigEd25519 {
		t.Errorf("active signer %s %s", s2.KeyID(), s2.Algorithm())
	}
	if len(k.verificationKeys()) != 2 {
		t.Errorf("verification keys %d", len(k.verificationKeys()))
	}
}

func TestRevoke(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	k, _ := Open(p, Options{})
	s, _ := k.ActiveSigner()
	msg := []byte("m")
	sig, _ := s.Sign(msg)
	e, err := Revoke(p, Options{}, s.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	if e.RevokedAt == "" || e.Active {
		t.Errorf("revoked entry %+v", e)
	}
	k, _ = Open(p, Options{})
	err = k.Verify(s.KeyID(), SigHMACSHA256, msg, sig)
	if !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), "was revoked at "+e.RevokedAt) {
		t.Errorf("verify with revoked key: %v", err)
	}
	err = k.Verify("", SigHMACSHA256, msg, sig)
	if !errors.Is(err, ErrRevoked) {
		t.Errorf("try-all with only a revoked key: %v", err)
	}
	if _, err := k.ActiveSigner(); err == nil || !strings.Contains(err.Error(), "no active key") || !strings.Contains(exitcode.HintOf(err), "witness key generate") {
		t.Errorf("signer after revoking the active key: %v", err)
	}
	if _, err := Revoke(p, Options{}, s.KeyID()); err == nil || !strings.Contains(err.Error(), "already revoked at "+e.RevokedAt) {
		t.Errorf("second revoke: %v", err)
	}
	if _, err := Revoke(p, Options{}, "nope"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestVerifyRules(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	k, _ := Open(p, Options{})
	s, _ := k.ActiveSigner()
	msg := []byte("m")
	sig, _ := s.Sign(msg)
	tests := []struct {
		name        string
		keyID, alg  string
		sig         string
		wantErr     error
		wantAnyFail bool
	}{
		{"right", s.KeyID(), SigHMACSHA256, sig, nil, false},
		{"upper-case hex", s.KeyID(), SigHMACSHA256, strings.ToUpper(sig), ErrBadSignature, true},
		{"wrong algorithm", s.KeyID(), SigEd25519, sig, ErrAlgorithm, true},
		{"unknown algorithm", s.KeyID(), "x", sig, nil, true},
		{"unknown key", "nope", SigHMACSHA256, sig, ErrUnknownKey, true},
		{"truncated", "", SigHMACSHA256, sig[:63], ErrBadSignature, true},
	}
	for _, tt := range tests {
		err := k.Verify(tt.keyID, tt.alg, msg, tt.sig)
		if (err != nil) != tt.wantAnyFail || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
		err  bool
	}{
		{"WITNESS_KEYRING", map[string]string{"WITNESS_KEYRING": "/k/keys.json", "HOME": "/h"}, "/k/keys.json", false},
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/witness/keys.json", false},
		{"HOME", map[string]string{"HOME": "/h"}, "/h/.config/witness/keys.json", false},
		{"relative XDG ignored", map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/witness/keys.json", false},
		{"nothing", map[string]string{}, "", true},
	}
	for _, tt := range tests {
		got, err := DefaultPath(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.err || got != filepath.FromSlash(tt.want) {
			t.Errorf("%s: %q %v", tt.name, got, err)
		}
	}
}

func TestTrustFile(t *testing.T) {
	a := tempKeyring(t, AlgEd25519)
	b := tempKeyring(t, AlgEd25519)
	h := tempKeyring(t, AlgHMAC)
	ka, _ := Open(a, Options{})
	kb, _ := Open(b, Options{})
	kh, _ := Open(h, Options{})
	if _, err := kh.ExportTrust(); err == nil {
		t.Error("an HMAC-only keyring exported a trust file")
	}
	ta, _ := ka.ExportTrust()
	tb, _ := kb.ExportTrust()
	if err := ta.Merge(tb); err != nil {
		t.Fatal(err)
	}
	data, err := ta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		raw, _ := os.ReadFile(p)
		es, _ := Parse(raw, p)
		for _, e := range es {
			secret := string(raw)[strings.Index(string(raw), `"secret": "`)+11:][:64]
			if strings.Contains(string(data), secret) {
				t.Fatalf("trust file contains a secret of %s", e.KeyID)
			}
		}
	}
	back, err := ParseTrust(data, "trust.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ta, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	sa, _ := ka.ActiveSigner()
	sig, _ := sa.Sign([]byte("m"))
	if err := back.Verify(sa.KeyID(), SigEd25519, []byte("m"), sig); err != nil {
		t.Errorf("trusted key does not verify: %v", err)
	}
	if err := back.Verify(sa.KeyID(), SigEd25519, []byte("n"), sig); !errors.Is(err, ErrBadSignature) {
		t.Errorf("wrong message: %v", err)
	}
	// Conflicting public key for one id is refused.
	conflict := &TrustSet{Keys: []TrustedKey{{KeyID: sa.KeyID(), Algorithm: AlgEd25519, PublicKey: tb.Keys[0].PublicKey}}}
	if err := back.Merge(conflict); err == nil {
		t.Error("conflicting trust merge accepted")
	}
	for _, bad := range []string{`{"format":"witness-trust/v2","keys":[]}`, `{"format":"witness-trust/v1","keys":[{"key_id":"k","algorithm":"hmac","public_key":"x"}]}`, `{"format":"witness-trust/v1","keys":[{"key_id":"k","algorithm":"ed25519","public_key":"x","secret":"y"}]}`} {
		if _, err := ParseTrust([]byte(bad), "t.json"); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestEntriesHideSecrets(t *testing.T) {
	p := tempKeyring(t, AlgHMAC)
	k, _ := Open(p, Options{})
	for _, e := range k.Entries() {
		if e.secret != nil {
			t.Error("Entries exposes a secret")
		}
	}
}

// TestTrustLogKeys: log_keys pins transparency logs' keys (issue 30): it
// round-trips, merges without duplicates, stays out of files without it,
// and a malformed or repeated entry is refused naming the field. A log
// key vouches for nothing else: it is no key of the trust set.
func TestTrustLogKeys(t *testing.T) {
	vkey := func(name string, seed byte) string {
		k, err := note.NewEd25519VerifierKey(name, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32)).Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b := vkey("example.test/log", 1), vkey("example.test/other", 2)
	ts, err := ParseTrust([]byte(`{"format":"witness-trust/v1","keys":[],"log_keys":["`+b+`"]}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.Keys) != 0 || len(ts.LogKeys) != 1 || ts.has("example.test/other") {
		t.Fatalf("parsed %+v", ts)
	}
	if err := ts.Merge(&TrustSet{LogKeys: []string{a, b}}); err != nil {
		t.Fatal(err)
	}
	if len(ts.LogKeys) != 2 || ts.LogKeys[0] != a {
		t.Fatalf("merged log keys %q", ts.LogKeys)
	}
	out, err := ts.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseTrust(out, "again.json")
	if err != nil || len(again.LogKeys) != 2 {
		t.Fatalf("round trip: %v %+v\n%s", err, again, out)
	}
	empty, err := (&TrustSet{}).Marshal()
	if err != nil || strings.Contains(string(empty), "log_keys") {
		t.Fatalf("a trust file without log keys: %v\n%s", err, empty)
	}
	for _, c := range []struct{ body, want string }{
		{`["example.test/log+zz"]`, `t.json:1:40: $.log_keys: key 0: "example.test/log+zz" is not a signed-note verifier key`},
		{`["` + a + `","` + a + `"]`, "$.log_keys: key 1 (" + a + ") is listed twice"},
		{`[1]`, "log_keys"},
	} {
		_, err := ParseTrust([]byte(`{"format":"witness-trust/v1","keys":[],"log_keys":`+c.body+`}`), "t.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("log_keys %s: want %q, got %v", c.body, c.want, err)
		}
	}
}
