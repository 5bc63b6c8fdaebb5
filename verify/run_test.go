package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
)

// newEd25519Keyring makes a keyring with one Ed25519 key in dir.
func newEd25519Keyring(t *testing.T, dir, name string) *keyring.Keyring {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := keyring.Generate(p, keyring.Options{}, keyring.AlgEd25519); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.Open(p, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The seal check: a good signature passes, a quorum not met is a
// violation, an altered seal is tampered, and the evidence is judged either
// way.
func TestSealChecks(t *testing.T) {
	dir := t.TempDir()
	k1 := newEd25519Keyring(t, dir, "k1.json")
	k2 := newEd25519Keyring(t, dir, "k2.json")
	trust, err := k1.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	t2, err := k2.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.Merge(t2); err != nil {
		t.Fatal(err)
	}
	body := seal.Body{CreatedAt: testTS, SystemPromptSHA256: sha(testPrompt), WitnessID: "witness-test",
		Tools: []seal.Tool{{Name: "read_file", Scopes: []string{"read:/data/**"}}, {Name: "list_dir", Scopes: []string{"read:/data/**"}}, {Name: "write_file", Scopes: []string{"write:/out/**"}}}}
	s1, err := k1.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := seal.Sign(body, s1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sealed.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sealPath := filepath.Join(dir, "seal.json")
	if err := os.WriteFile(sealPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plan := PlanFromSeal(sealed)
	events := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(events, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(sealFile string, quorum int) *Report {
		t.Helper()
		r, err := Run(Options{SealFile: sealFile, EventsFile: events, SealKeys: seal.VerifyOptions{Trust: trust, Quorum: quorum}, EndVerifier: testKey})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return r
	}

	if r := run(sealPath, 0); r.Verdict != verified || len(r.Seal.Signers) != 1 {
		t.Errorf("good seal: verdict %s, signers %v", r.Verdict, r.Seal.Signers)
	}
	r := run(sealPath, 2)
	if f := findCode(r, "seal-quorum-not-met"); r.Verdict != Violation || f == nil || f.Class != classViolation || !strings.Contains(f.Message, "1 of 2") {
		t.Errorf("quorum 2 with one signer: verdict %s, finding %+v", r.Verdict, f)
	}
	// cosigned by the second key: the quorum is met
	s2, err := k2.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	if err := sealed.Cosign(s2); err != nil {
		t.Fatal(err)
	}
	data2, _ := sealed.Marshal()
	cosigned := filepath.Join(dir, "cosigned.json")
	os.WriteFile(cosigned, data2, 0o644)
	if r := run(cosigned, 2); r.Verdict != verified {
		t.Errorf("2-of-2: verdict %s %+v", r.Verdict, r.Findings)
	}
	// one byte of the body changed: tampered, and the evidence still judged
	altered := filepath.Join(dir, "altered.json")
	os.WriteFile(altered, []byte(strings.Replace(string(data), "witness-test", "witness-tesT", 1)), 0o644)
	r = run(altered, 0)
	if f := findCode(r, "seal-invalid"); r.Verdict != Tampered || f == nil || f.SealClause != "signature" {
		t.Errorf("altered seal: verdict %s, finding %+v", r.Verdict, f)
	}
	if findCode(r, "seal-mismatch") == nil {
		t.Errorf("altered seal: the evidence was not judged (no seal-mismatch): %+v", r.Findings)
	}
	// a file that is not a seal: tampered, nothing else judged
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tools": 3}`), 0o644)
	r = run(bad, 0)
	if r.Verdict != Tampered || findCode(r, "seal-invalid") == nil || r.Seal.Digest != "" {
		t.Errorf("malformed seal: %s %+v", r.Verdict, r.Findings)
	}
	// no seal file: an error (usage), no verdict
	if _, err := Run(Options{SealFile: filepath.Join(dir, "nope.json"), EventsFile: events, SealKeys: seal.VerifyOptions{Trust: trust}}); err == nil {
		t.Error("missing seal: no error")
	}
	// a seal read before Run (LoadedSeal) is the one judged against: the
	// file replaced after the read changes nothing (read again, it would
	// be malformed)
	swapped := filepath.Join(dir, "swapped.json")
	os.WriteFile(swapped, data, 0o644)
	sf, err := LoadSeal(swapped, seal.VerifyOptions{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(swapped, []byte(`{"tools": 3}`), 0o644)
	r, err = Run(Options{SealFile: swapped, LoadedSeal: sf, EventsFile: events, SealKeys: seal.VerifyOptions{Trust: trust}, EndVerifier: testKey})
	if err != nil || r.Verdict != verified || r.Seal.Digest != plan.Ref {
		t.Errorf("loaded seal, file replaced: %v %+v", err, r)
	}
	if r := run(swapped, 0); r.Verdict != Tampered {
		t.Errorf("the replaced file read again: verdict %s", r.Verdict)
	}
}
