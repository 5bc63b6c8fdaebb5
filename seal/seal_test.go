package seal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

const (
	fixturePath = "../testdata/compat/atw-0.1.0/seal_without_damaging_tool.json"
	zeroKey     = "0000000000000000000000000000000000000000000000000000000000000000"
	fixtureSig  = "hmac-sha256:dc91ea105843ada26bedb76388116820c12ff4e81f276328ab20a691a182996a"
	fixtureRef  = "9edc4d89189a690d3e379381523729807a48b325f9b14329a2f25874507fd8d2"
)

func loadFixture(t *testing.T) *Sealed {
	t.Helper()
	s, err := Load(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFixtureVerifiesWithZeroKey(t *testing.T) {
	s := loadFixture(t)
	res, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey})
	if err != nil {
		t.Fatalf("fixture does not verify: %v", err)
	}
	if res.Verdict != "ok" || res.Checks[0].Status != StatusOK {
		t.Errorf("result %+v", res)
	}
	if got := s.Ref(); got != fixtureRef {
		t.Errorf("seal_ref = %s, want %s", got, fixtureRef)
	}
}

func TestFixtureResignReproducesSignature(t *testing.T) {
	s := loadFixture(t)
	signer, err := keyring.LegacySigner(zeroKey)
	if err != nil {
		t.Fatal(err)
	}
	re, err := Sign(s.Body, signer)
	if err != nil {
		t.Fatal(err)
	}
	if re.Signature != fixtureSig || s.Signature != fixtureSig {
		t.Errorf("re-signed %s, fixture %s, want %s", re.Signature, s.Signature, fixtureSig)
	}
	if re.KeyID != "" {
		t.Errorf("legacy signature carries key_id %q", re.KeyID)
	}
}

// Every single byte of every body field, changed, makes verification fail.
func TestEveryBodyBytePositionFails(t *testing.T) {
	base := loadFixture(t)
	type field struct {
		name string
		get  func(s *Sealed) *string
	}
	fields := []field{
		{"created_at", func(s *Sealed) *string { return &s.CreatedAt }},
		{"system_prompt_sha256", func(s *Sealed) *string { return &s.SystemPromptSHA256 }},
		{"witness_id", func(s *Sealed) *string { return &s.WitnessID }},
	}
	for i := range base.Tools {
		i := i
		fields = append(fields, field{"tools[" + string(rune('0'+i)) + "].name", func(s *Sealed) *string { return &s.Tools[i].Name }})
		for j := range base.Tools[i].Scopes {
			j := j
			fields = append(fields, field{"tools[" + string(rune('0'+i)) + "].scopes[" + string(rune('0'+j)) + "]", func(s *Sealed) *string { return &s.Tools[i].Scopes[j] }})
		}
	}
	checked := 0
	for _, f := range fields {
		n := len(*f.get(base))
		for pos := 0; pos < n; pos++ {
			for _, mut := range []func(byte) byte{func(b byte) byte { return b ^ 0x01 }, func(b byte) byte { return b ^ 0x20 }} {
				s := clone(base)
				p := f.get(s)
				b := []byte(*p)
				b[pos] = mut(b[pos])
				*p = string(b)
				_, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey})
				if err == nil {
					t.Fatalf("%s byte %d changed (%q) still verifies", f.name, pos, *p)
				}
				if exitcode.Of(err) != exitcode.Tampered {
					t.Fatalf("%s byte %d: exit %v, want tampered", f.name, pos, exitcode.Of(err))
				}
				checked++
			}
		}
	}
	if checked < 2*(25+64+17) {
		t.Errorf("only %d mutations checked", checked)
	}
}

// Every byte position of the seal file, changed, makes Load or Verify fail.
func TestEveryFileBytePositionFails(t *testing.T) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	for pos := range data {
		for _, repl := range []byte{'X', data[pos] ^ 0x01} {
			if repl == data[pos] {
				continue
			}
			b := append([]byte(nil), data...)
			b[pos] = repl
			s, err := Parse(b, "mutated.json")
			if err != nil {
				if exitcode.Of(err) != exitcode.Tampered {
					t.Fatalf("byte %d: parse error with exit %v: %v", pos, exitcode.Of(err), err)
				}
				continue
			}
			if isWhitespaceSwap(data[pos], repl) {
				continue
			}
			if _, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey}); err == nil {
				t.Fatalf("byte %d changed %q->%q: still verifies", pos, data[pos], repl)
			}
		}
	}
}

func isWhitespaceSwap(a, b byte) bool {
	ws := func(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
	return ws(a) && ws(b)
}

func clone(s *Sealed) *Sealed {
	c := *s
	c.Tools = make([]Tool, len(s.Tools))
	for i, t := range s.Tools {
		t.Scopes = append([]string(nil), t.Scopes...)
		c.Tools[i] = t
	}
	c.Cosignatures = append([]Cosignature(nil), s.Cosignatures...)
	return &c
}

func TestSignatureAlgorithmTag(t *testing.T) {
	data, _ := os.ReadFile(fixturePath)
	hexsig := strings.TrimPrefix(fixtureSig, "hmac-sha256:")
	tests := []struct {
		name      string
		signature string
		wantParse bool // parse error expected
	}{
		{"unknown tag with the right hex (0.1.0 accepted it)", "x:" + hexsig, true},
		{"upper-case tag", "HMAC-SHA256:" + hexsig, true},
		{"no tag", hexsig, true},
		{"upper-case hex", "hmac-sha256:" + strings.ToUpper(hexsig), false},
		{"ed25519 tag on an hmac value", "ed25519:" + hexsig, false},
		{"truncated", fixtureSig[:len(fixtureSig)-1], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(strings.Replace(string(data), fixtureSig, tt.signature, 1))
			s, err := Parse(b, "x.json")
			if tt.wantParse {
				if err == nil {
					t.Fatal("parsed")
				}
				if exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), "$.signature") {
					t.Errorf("error %v (exit %v)", err, exitcode.Of(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// an ed25519 tag with only ATW_WITNESS_KEY (an HMAC key):
			// nothing can check it (unauthenticated); an HMAC tag whose
			// value is not the body's HMAC is tampered
			want := exitcode.Tampered
			if strings.HasPrefix(tt.signature, "ed25519:") {
				want = exitcode.Unauthenticated
			}
			if _, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey}); exitcode.Of(err) != want {
				t.Errorf("verify: %v (exit %v), want %v", err, exitcode.Of(err), want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	good := `{"created_at":"t","signature":"hmac-sha256:00","system_prompt_sha256":"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b","tools":[{"name":"a","scopes":[]}],"witness_id":"w"}`
	if _, err := Parse([]byte(good), "good.json"); err != nil {
		t.Fatalf("good seal refused: %v", err)
	}
	tests := []struct{ name, from, to, want string }{
		{"unknown top-level field", `"witness_id":"w"`, `"witness_id":"w","extra":1`, "extra: unknown field"},
		{"unknown tool field", `"scopes":[]`, `"scopes":[],"scope":[]`, "tools[0].scope: unknown field"},
		{"missing field", `,"witness_id":"w"`, ``, "witness_id: missing"},
		{"numeric tool name", `"name":"a"`, `"name":1`, "tools[0].name: want a string, got number"},
		{"string scopes", `"scopes":[]`, `"scopes":"abc"`, "tools[0].scopes: want a array"},
		{"null witness_id", `"witness_id":"w"`, `"witness_id":null`, "witness_id: want a string, got null"},
		{"duplicate key", `"witness_id":"w"`, `"witness_id":"w","witness_id":"v"`, `duplicate key "witness_id"`},
		{"no tools", `[{"name":"a","scopes":[]}]`, `[]`, "tools: must list at least one tool"},
		{"bad prompt hash", `"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b"`, `"5FE1"`, "system_prompt_sha256: want 64 lowercase hex"},
		{"empty key_id", `"witness_id":"w"`, `"witness_id":"w","key_id":""`, "key_id: must be non-empty"},
		{"bad cosignature alg", `"witness_id":"w"`, `"witness_id":"w","cosignatures":[{"key_id":"k","alg":"rsa","sig":"x"}]`, `cosignatures[0].alg: unknown algorithm "rsa"`},
		{"trailing data", `"w"}`, `"w"} {}`, "unexpected data after"},
		{"not json", good, `{`, "not valid JSON"},
		{"array", good, `[]`, "want a JSON object, got array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Replace(good, tt.from, tt.to, 1)
			_, err := Parse([]byte(in), "s.json")
			if err == nil {
				t.Fatalf("parsed %s", in)
			}
			if exitcode.Of(err) != exitcode.Tampered {
				t.Errorf("exit %v, want tampered", exitcode.Of(err))
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "s.json:1") {
				t.Errorf("error %q does not name file, line and %q", err, tt.want)
			}
		})
	}
}

func TestParseNamesLine(t *testing.T) {
	data, _ := os.ReadFile(fixturePath)
	s, _ := Parse(data, "f")
	s.Cosignatures = nil
	b, _ := s.Marshal()
	// Add an unknown field on the line of "witness_id" (the last line but one).
	in := strings.Replace(string(b), `"witness_id"`, `"bogus": 1, "witness_id"`, 1)
	_, err := Parse([]byte(in), "seal.json")
	line := strings.Count(in[:strings.Index(in, `"bogus"`)], "\n") + 1
	col := strings.Index(in, `"bogus"`) - strings.LastIndex(in[:strings.Index(in, `"bogus"`)], "\n")
	want := "seal.json:" + itoa(line) + ":" + itoa(col) + ": $.bogus: unknown field"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

func TestMarshalRoundTripAndPythonLayout(t *testing.T) {
	s := loadFixture(t)
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(string(b), "\n") {
		t.Error("seal file ends with a newline; 0.1.0 writes none")
	}
	want := "{\n  \"created_at\": \"2026-08-30T14:33:00+00:00\",\n  \"signature\": \"" + fixtureSig + "\",\n  \"system_prompt_sha256\": \"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b\",\n  \"tools\": [\n    {\n      \"name\": \"read_file\",\n      \"scopes\": [\n        \"read:/data/**\"\n      ]\n    },\n    {\n      \"name\": \"list_dir\",\n      \"scopes\": [\n        \"read:/data/**\"\n      ]\n    }\n  ],\n  \"witness_id\": \"witness-fixture-1\"\n}"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("layout (-python indent=2 +go):\n%s", diff)
	}
	back, err := Parse(b, "rt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestAllowsTool(t *testing.T) {
	s := loadFixture(t)
	tests := []struct {
		name string
		ok   bool
	}{{"read_file", true}, {"list_dir", true}, {"delete_file", false}, {"", false}}
	for _, tt := range tests {
		tool, ok := s.allowsTool(tt.name)
		if ok != tt.ok || (ok && tool.Name != tt.name) {
			t.Errorf("AllowsTool(%q) = %v, %v", tt.name, tool, ok)
		}
	}
}

func TestDefinitionSHA256IsSignedAndOptional(t *testing.T) {
	s := loadFixture(t)
	before, _ := s.canonicalBody()
	if strings.Contains(string(before), "definition_sha256") {
		t.Fatal("empty definition_sha256 appears in the body")
	}
	s.Tools[0].DefinitionSHA256 = strings.Repeat("ab", 32)
	after, _ := s.canonicalBody()
	if !strings.Contains(string(after), `"definition_sha256":"`+strings.Repeat("ab", 32)+`"`) {
		t.Fatalf("body %s lacks the definition hash", after)
	}
	if _, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey}); err == nil {
		t.Error("adding a definition hash did not break the 0.1.0 signature")
	}
}

// newKeyring makes a keyring with one active key of alg in a temp dir.
func newKeyring(t *testing.T, alg string) (*keyring.Keyring, string) {
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

func reopen(t *testing.T, path string) *keyring.Keyring {
	t.Helper()
	k, err := keyring.Open(path, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyringVerification(t *testing.T) {
	k, path := newKeyring(t, keyring.AlgHMAC)
	signerA, _ := k.ActiveSigner()
	a := signerA.KeyID()
	s, err := Sign(loadFixture(t).Body, signerA)
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyID != a {
		t.Fatalf("key_id %q, want %q", s.KeyID, a)
	}
	_, _, err = keyring.Rotate(path, keyring.Options{}, "")
	if err != nil {
		t.Fatal(err)
	}
	k = reopen(t, path)
	act, _ := k.Active()
	b := act.KeyID

	tests := []struct {
		name       string
		keyID      string
		revokeA    bool
		wantStatus string
		wantInErr  string
	}{
		{"key_id names the signing key (inactive after rotation)", a, false, StatusOK, ""},
		{"no key_id: try every non-revoked key", "", false, StatusOK, ""},
		{"key_id names another key: only that key is used", b, false, StatusBad, "does not verify"},
		{"key_id unknown", "nope", false, statusUnknown, "not found"},
		{"signing key revoked, named by key_id", a, true, StatusRevoked, "was revoked at"},
		{"signing key revoked, no key_id", "", true, StatusRevoked, "which was revoked at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kp := filepath.Join(t.TempDir(), "keys.json")
			data, _ := os.ReadFile(path)
			os.WriteFile(kp, data, 0o600)
			if tt.revokeA {
				if _, err := keyring.Revoke(kp, keyring.Options{}, a); err != nil {
					t.Fatal(err)
				}
			}
			c := clone(s)
			c.KeyID = tt.keyID
			res, err := Verify(c, VerifyOptions{Keyring: reopen(t, kp)})
			if got := res.Checks[0].Status; got != tt.wantStatus {
				t.Errorf("status %s (%s), want %s", got, res.Checks[0].Detail, tt.wantStatus)
			}
			if tt.wantStatus == StatusOK {
				if err != nil {
					t.Errorf("err %v", err)
				}
				return
			}
			// a key the keyring does not hold cannot check (6); a bad or
			// revoked signature is tampered (3)
			want := exitcode.Tampered
			if tt.wantStatus == statusUnknown {
				want = exitcode.Unauthenticated
			}
			if exitcode.Of(err) != want || !strings.Contains(res.Checks[0].Detail, tt.wantInErr) {
				t.Errorf("err %v (exit %v), detail %q, want %v and %q", err, exitcode.Of(err), res.Checks[0].Detail, want, tt.wantInErr)
			}
		})
	}
}

func TestLegacyKeySizes(t *testing.T) {
	if _, err := keyring.LegacySigner(strings.Repeat("00", 16)); err == nil {
		t.Error("a 16-byte legacy key was accepted for signing")
	}
	if _, err := keyring.LegacySigner(strings.Repeat("00", 32)); err != nil {
		t.Errorf("a 32-byte key was refused: %v", err)
	}
	// A seal made by 0.1.0 with a 16-byte key still verifies (with a warning).
	s := loadFixture(t)
	body, _ := s.canonicalBody()
	s.Signature = "hmac-sha256:" + keyring.HMACHex(make([]byte, 16), body)
	res, err := Verify(s, VerifyOptions{LegacyKeyHex: strings.Repeat("00", 16)})
	if err != nil || !strings.Contains(res.Checks[0].Detail, "only 16 bytes") {
		t.Errorf("16-byte legacy verify: %v, %+v", err, res.Checks)
	}
	if _, err := Verify(s, VerifyOptions{LegacyKeyHex: strings.Repeat("00", 15)}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("15-byte legacy key: %v, want a usage error", err)
	}
	if _, err := Verify(s, VerifyOptions{LegacyKeyHex: "00 00"}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("whitespace inside a legacy key: %v, want a usage error", err)
	}
}

func TestNoKeysIsUsage(t *testing.T) {
	_, err := Verify(loadFixture(t), VerifyOptions{})
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("got %v", err)
	}
}

// trustOf builds a trust set of the keyrings' Ed25519 keys.
func trustOf(t *testing.T, ks ...*keyring.Keyring) *trustSet {
	t.Helper()
	ts := &trustSet{}
	for _, k := range ks {
		e, err := k.ExportTrust()
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Merge(e); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

func TestEd25519QuorumAndCosign(t *testing.T) {
	ka, _ := newKeyring(t, keyring.AlgEd25519)
	kb, _ := newKeyring(t, keyring.AlgEd25519)
	kc, _ := newKeyring(t, keyring.AlgEd25519)
	sa, _ := ka.ActiveSigner()
	sb, _ := kb.ActiveSigner()
	sc, _ := kc.ActiveSigner()
	s, err := Sign(loadFixture(t).Body, sa)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Signature, "ed25519:") {
		t.Fatalf("signature %s", s.Signature)
	}
	ref := s.Ref()
	if err := s.Cosign(sb); err != nil {
		t.Fatal(err)
	}
	if s.Ref() != ref {
		t.Error("cosigning changed seal_ref")
	}
	if err := s.Cosign(sb); err == nil {
		t.Error("the same key cosigned twice")
	}
	if err := s.Cosign(sa); err == nil {
		t.Error("the primary key cosigned its own seal")
	}
	trust := trustOf(t, ka, kb, kc)

	// Public keys alone verify the Ed25519 seal.
	if res, err := Verify(s, VerifyOptions{Trust: trust}); err != nil || res.Verdict != "ok" {
		t.Fatalf("trust-only verify: %v %+v", err, res)
	}
	dup := clone(s)
	dup.Cosignatures = append(dup.Cosignatures, dup.Cosignatures[0]) // the same key again
	dup.Cosignatures = append(dup.Cosignatures, Cosignature{KeyID: sa.KeyID(), Alg: "ed25519", Sig: strings.TrimPrefix(s.Signature, "ed25519:")})
	three := clone(s)
	if err := three.Cosign(sc); err != nil {
		t.Fatal(err)
	}
	badCos := clone(three)
	badCos.Cosignatures[1].Sig = badCos.Cosignatures[0].Sig
	tamperedBody := clone(three)
	tamperedBody.WitnessID += "x"

	tests := []struct {
		name         string
		s            *Sealed
		trust        *trustSet
		quorum       int
		wantCode     exitcode.Code
		wantDistinct int
	}{
		{"2 signatures, quorum 2", s, trust, 2, exitcode.OK, 2},
		{"2 signatures, quorum 3", s, trust, 3, exitcode.Violation, 2},
		{"3 signatures, quorum 3", three, trust, 3, exitcode.OK, 3},
		{"duplicates count once", dup, trust, 3, exitcode.Violation, 2},
		{"untrusted cosigner not counted", three, trustOf(t, ka, kb), 3, exitcode.Violation, 2},
		{"a cosignature that does not verify", badCos, trust, 2, exitcode.Tampered, 2},
		{"body changed", tamperedBody, trust, 1, exitcode.Tampered, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Verify(tt.s, VerifyOptions{Trust: tt.trust, Quorum: tt.quorum})
			if exitcode.Of(err) != tt.wantCode {
				t.Errorf("exit %v (%v), want %v", exitcode.Of(err), err, tt.wantCode)
			}
			if res.Distinct != tt.wantDistinct {
				t.Errorf("distinct %d, want %d (%+v)", res.Distinct, tt.wantDistinct, res.Checks)
			}
		})
	}
}

func TestTrustRevokedKeyRefused(t *testing.T) {
	k, path := newKeyring(t, keyring.AlgEd25519)
	sg, _ := k.ActiveSigner()
	s, _ := Sign(loadFixture(t).Body, sg)
	if _, err := keyring.Revoke(path, keyring.Options{}, sg.KeyID()); err != nil {
		t.Fatal(err)
	}
	trust := trustOf(t, reopen(t, path))
	res, err := Verify(s, VerifyOptions{Trust: trust})
	if exitcode.Of(err) != exitcode.Tampered || res.Checks[0].Status != StatusRevoked || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("err %v, checks %+v", err, res.Checks)
	}
}

func TestVerifyErrorsAreTyped(t *testing.T) {
	s := loadFixture(t)
	s.WitnessID = "changed"
	_, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey})
	var e *exitcode.Error
	if !errors.As(err, &e) || e.Hint == "" {
		t.Errorf("error %v has no code and hint", err)
	}
}

// Same spec, frozen time, same key: the seal file is byte-identical across
// 10 runs, for HMAC and for Ed25519 (deterministic signatures).
func TestSealDeterministic(t *testing.T) {
	sp := &Spec{SystemPrompt: "Solo lee archivos en /data", Tools: []Tool{{Name: "read_file", Scopes: []string{"read:/data/**"}}, {Name: "list_dir", Scopes: []string{"read:/data/**"}}}, WitnessID: "witness-cli-1"}
	env := map[string]string{"ATW_WITNESS_TS": "2026-08-30T14:33:00+00:00"}
	for _, alg := range []string{keyring.AlgHMAC, keyring.AlgEd25519} {
		k, _ := newKeyring(t, alg)
		var first []byte
		for i := 0; i < 10; i++ {
			body, err := NewBody(sp, BodyOptions{Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			signer, _ := k.ActiveSigner()
			s, err := Sign(body, signer)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.Marshal()
			if i == 0 {
				first = b
			} else if string(b) != string(first) {
				t.Fatalf("%s run %d differs", alg, i)
			}
		}
	}
}
