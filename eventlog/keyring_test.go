package eventlog

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/agent-trace-witness/witness/keyring"
)

// The session end signed and verified with the real keyring, HMAC and
// Ed25519; a log signed by another keyring's key is untrusted; a revoked
// key does not vouch for a log.
func TestFinishWithRealKeyring(t *testing.T) {
	for _, alg := range []string{keyring.AlgHMAC, keyring.AlgEd25519} {
		t.Run(alg, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "testkeys.json")
			if _, err := keyring.Generate(path, keyring.Options{}, alg); err != nil {
				t.Fatal(err)
			}
			k, err := keyring.OpenExisting(path, keyring.Options{})
			must(t, err)
			s, err := k.ActiveSigner()
			must(t, err)
			data := sampleLog(t, s)
			v := UnknownKeyAs(k, keyring.ErrUnknownKey, keyring.ErrRevoked)
			rep, err := VerifyLog(bytes.NewReader(data), "x", VerifyLogOptions{Verifier: v})
			if err != nil || rep.Signatures[0].Status != "valid" {
				t.Fatalf("%v %+v", err, rep.Signatures)
			}
			// one byte of the signed end changed
			edited := bytes.Replace(data, []byte(`"session_end"`), []byte(`"session_end" `), 1)
			if rep, _ := VerifyLog(bytes.NewReader(edited), "x", VerifyLogOptions{Verifier: v}); rep.Status != StatusTampered {
				t.Fatalf("edited end: %s", rep.Status)
			}
			// another keyring does not know the key
			other := filepath.Join(dir, "other.json")
			if _, err := keyring.Generate(other, keyring.Options{}, alg); err != nil {
				t.Fatal(err)
			}
			ko, err := keyring.OpenExisting(other, keyring.Options{})
			must(t, err)
			rep, _ = VerifyLog(bytes.NewReader(data), "x", VerifyLogOptions{Verifier: UnknownKeyAs(ko, keyring.ErrUnknownKey, keyring.ErrRevoked)})
			if rep.Status != StatusUnsigned || rep.Signatures[0].Status != "unknown_key" {
				t.Fatalf("other keyring: %s %+v", rep.Status, rep.Signatures)
			}
			// revoked: no longer vouches
			if _, err := keyring.Revoke(path, keyring.Options{}, s.KeyID()); err != nil {
				t.Fatal(err)
			}
			kr, err := keyring.OpenExisting(path, keyring.Options{})
			must(t, err)
			rep, _ = VerifyLog(bytes.NewReader(data), "x", VerifyLogOptions{Verifier: UnknownKeyAs(kr, keyring.ErrUnknownKey, keyring.ErrRevoked)})
			if rep.Status != StatusUnsigned {
				t.Fatalf("revoked key: %s %+v", rep.Status, rep.Signatures)
			}
		})
	}
}
