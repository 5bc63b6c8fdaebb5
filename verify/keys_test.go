package verify

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/keyring"
)

// The end verifier speaks capture's language: a key the keyring holds that
// does not match is a bad signature (tampered); a key nobody holds, or a
// revoked one, is unknown (the end is not vouched for: incomplete).
func TestEndVerifier(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "keys.json")
	if _, err := keyring.Generate(p, keyring.Options{}, keyring.AlgHMAC); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.Open(p, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("end")
	sig, _ := s.Sign(msg)
	v := EndVerifier(k, nil)
	if err := v.Verify(s.KeyID(), s.Algorithm(), msg, sig); err != nil {
		t.Fatalf("good signature: %v", err)
	}
	cases := []struct {
		name, keyID, alg, sig string
		unknown               bool
	}{
		{"wrong signature", s.KeyID(), s.Algorithm(), "00" + sig[2:], false},
		{"malformed signature", s.KeyID(), s.Algorithm(), "zz", false},
		{"algorithm changed", s.KeyID(), keyring.SigEd25519, sig, false},
		{"key not held", "someone-else", s.Algorithm(), sig, true},
	}
	for _, c := range cases {
		err := v.Verify(c.keyID, c.alg, msg, c.sig)
		if err == nil || errors.Is(err, eventlog.ErrUnknownKey) != c.unknown {
			t.Errorf("%s: %v (unknown key: %v, want %v)", c.name, err, errors.Is(err, eventlog.ErrUnknownKey), c.unknown)
		}
	}
	if EndVerifier(nil, nil) != nil {
		t.Error("no keys: want a nil verifier")
	}
}
