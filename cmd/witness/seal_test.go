package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"

	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
)

// The envelope file `witness seal --envelope dsse` writes is accepted by an
// independent DSSE implementation, and its statement's subject is the seal
// body the seal file holds.
func TestSealEnvelopeFileVerifiesWithSecureSystemsLib(t *testing.T) {
	dir := t.TempDir()
	kr := filepath.Join(dir, "keys.json")
	e, err := keyring.Generate(kr, keyring.Options{}, keyring.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "agent.json")
	os.WriteFile(spec, []byte(`{"system_prompt":"p","tools":[{"name":"read_file","scopes":["read:/data/**"]}]}`), 0o644)
	env := map[string]string{"ATW_WITNESS_TS": "2026-08-30T14:33:00+00:00"}
	var stdout, stderr bytes.Buffer
	a := newApp(strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })
	out := filepath.Join(dir, "seal.json")
	if code := run([]string{"seal", "--spec", spec, "--out", out, "--keyring", kr, "--envelope", "dsse"}, a); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	line, err := os.ReadFile(filepath.Join(dir, "seal.intoto.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var envl dsse.Envelope
	if err := json.Unmarshal(line, &envl); err != nil {
		t.Fatal(err)
	}
	pub, _ := base64.StdEncoding.DecodeString(e.PublicKey)
	sv, err := signerverifier.NewED25519SignerVerifierFromSSLibKey(&signerverifier.SSLibKey{
		KeyType: "ed25519", Scheme: "ed25519", KeyID: e.KeyID, KeyVal: signerverifier.KeyVal{Public: hex.EncodeToString(pub)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dsse.NewEnvelopeVerifier(sv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Verify(context.Background(), &envl); err != nil {
		t.Fatalf("go-securesystemslib/dsse refuses the envelope witness wrote: %v", err)
	}
	payload, _ := envl.DecodeB64Payload()
	s, err := seal.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := s.Digest()
	if !strings.Contains(string(payload), `"digest":{"sha256":"`+digest+`"}`) || !strings.Contains(string(payload), `"predicateType":"`+seal.PredicateType+`"`) {
		t.Errorf("statement does not name the seal body digest %s:\n%s", digest, payload)
	}
}
