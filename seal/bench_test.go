package seal

import (
	"path/filepath"
	"testing"

	"github.com/agent-trace-witness/witness/keyring"
)

// BenchmarkVerify measures verifying the 0.1.0 fixture seal: with the
// legacy HMAC key, and an Ed25519 seal with two cosignatures against a
// trust file with a quorum of 3.
func BenchmarkVerify(b *testing.B) {
	s, err := Load(fixturePath)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hmac-legacy", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey}); err != nil {
				b.Fatal(err)
			}
		}
	})
	var keyrings []*keyring.Keyring
	trust := &trustSet{}
	for i := 0; i < 3; i++ {
		p := filepath.Join(b.TempDir(), "keys.json")
		if _, err := keyring.Generate(p, keyring.Options{}, keyring.AlgEd25519); err != nil {
			b.Fatal(err)
		}
		k, _ := keyring.Open(p, keyring.Options{})
		keyrings = append(keyrings, k)
		t, _ := k.ExportTrust()
		trust.Merge(t)
	}
	sg, _ := keyrings[0].ActiveSigner()
	es, _ := Sign(s.Body, sg)
	for _, k := range keyrings[1:] {
		c, _ := k.ActiveSigner()
		es.Cosign(c)
	}
	b.Run("ed25519-quorum-3", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Verify(es, VerifyOptions{Trust: trust, Quorum: 3}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
