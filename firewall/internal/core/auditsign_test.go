package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// testKeys generates a keyring with one key of alg.
func testKeys(t *testing.T, alg string) (*keyring.Keyring, string) {
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

// signedAudit evaluates the sample messages and signs the snapshot.
func signedAudit(t *testing.T, signers ...keyring.Signer) []byte {
	t.Helper()
	p := mustPolicy(t, pol("enforcement", codeIn, codeOut, `"english":{"initialRules":[`+normRule+`]},`+jevProv))
	var buf bytes.Buffer
	opts := EvaluateOptions{Policy: p, Provider: tableProvider{}, LocalAgent: "agent:me", Timestamp: "2026-08-30T14:33:00+00:00", Audit: &buf, Signers: signers}
	if _, err := Evaluate(bytes.NewReader(logOf(t, sampleMessagesFor("agent:me")...)), "events.jsonl", "digest", opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func verifyWith(t *testing.T, data []byte, keys *keyring.Verifier, require bool) *AuditVerdict {
	t.Helper()
	v, err := VerifyAuditWith(bytes.NewReader(data), "audit.ndjson", AuditVerifyOptions{Keys: keys, RequireSignature: require})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// relabel is a signer that files its signatures under another key id.
type relabel struct {
	keyring.Signer
	id string
}

func (r relabel) KeyID() string { return r.id }

// A signed snapshot is complete and authenticated; complete and
// authenticated are separate answers with their own exit codes.
func TestAuditSignature(t *testing.T) {
	for _, alg := range []string{keyring.AlgHMAC, keyring.AlgEd25519} {
		t.Run(alg, func(t *testing.T) {
			k, _ := testKeys(t, alg)
			s, _ := k.ActiveSigner()
			data := signedAudit(t, s)
			ls := lines(data)
			last := ls[len(ls)-1]
			if !strings.Contains(last, `"type":"signature"`) || !strings.Contains(last, `"keyId":"`+s.KeyID()+`"`) || !strings.Contains(ls[len(ls)-2], `"type":"complete"`) {
				t.Fatalf("no signature record after complete:\n%s", last)
			}
			// deterministic: same input, same bytes
			if again := signedAudit(t, s); !bytes.Equal(again, data) {
				t.Error("signing is not deterministic")
			}
			keys := keyring.NewVerifier(k, nil, nil)
			other, _ := testKeys(t, alg)
			unsigned := []byte(strings.Join(ls[:len(ls)-1], ""))
			flipped := []byte(strings.Join(ls[:len(ls)-1], "") + strings.Replace(last, `"sig":"`, `"sig":"A`, 1))
			editedCheck := bytes.Replace(data, []byte(`"disposition":"admitted"`), []byte(`"disposition":"withheld"`), 1)
			editedStart := bytes.Replace(data, []byte(`"startedAt":"`), []byte(`"startedAt":"1`), 1)
			// the complete record re-digested to match an edited check: the
			// structure is complete again, the signature is not
			twice := []byte(strings.Join(ls, "") + last)
			tests := []struct {
				name     string
				data     []byte
				keys     *keyring.Verifier
				require  bool
				auth     string
				complete bool
				code     exitcode.Code
			}{
				{"signed, key held", data, keys, false, AuthAuthenticated, true, exitcode.OK},
				{"signed, no keys given", data, nil, false, AuthUnauthenticated, true, exitcode.OK},
				{"signed, no keys given, signature required", data, nil, true, AuthUnauthenticated, true, exitcode.Incomplete},
				{"signed, another keyring", data, keyring.NewVerifier(other, nil, nil), false, AuthUnauthenticated, true, exitcode.OK},
				{"unsigned", unsigned, keys, false, AuthUnauthenticated, true, exitcode.OK},
				{"unsigned, signature required", unsigned, keys, true, AuthUnauthenticated, true, exitcode.Incomplete},
				{"signed, signature required", data, keys, true, AuthAuthenticated, true, exitcode.OK},
				{"signature bytes changed", flipped, keys, false, AuthTampered, true, exitcode.Tampered},
				{"a check edited after signing", editedCheck, keys, false, AuthTampered, false, exitcode.Tampered},
				{"a check edited, no keys given", editedCheck, nil, false, AuthTampered, false, exitcode.Tampered},
				{"the start record edited after signing", editedStart, keys, false, AuthTampered, true, exitcode.Tampered},
				{"the same signature twice", twice, keys, false, AuthAuthenticated, true, exitcode.OK},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					v := verifyWith(t, tt.data, tt.keys, tt.require)
					if v.Authentication != tt.auth || v.Complete != tt.complete || exitcode.Of(v.Err()) != tt.code {
						t.Errorf("authentication %s, complete %v, exit %v (%v); want %s, %v, %v\n%s", v.Authentication, v.Complete, exitcode.Of(v.Err()), v.Err(), tt.auth, tt.complete, tt.code, v.AuthString())
					}
					if tt.auth == AuthAuthenticated && v.Signers != 1 {
						t.Errorf("signers %d, want 1 (%+v)", v.Signers, v.Signatures)
					}
				})
			}
		})
	}
}

// One signer under two labels counts once; two keys count twice.
func TestAuditSignersCountedByKeyMaterial(t *testing.T) {
	k, _ := testKeys(t, keyring.AlgEd25519)
	s, _ := k.ActiveSigner()
	trust, err := k.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	alias := trust.Keys[0]
	alias.KeyID = "alias"
	trust.Keys = append(trust.Keys, alias)
	keys := keyring.NewVerifier(nil, trust, nil)
	for _, labels := range []keyring.Signer{relabel{s, "alias"}, relabel{s, ""}} {
		v := verifyWith(t, signedAudit(t, s, labels), keys, false)
		if v.Authentication != AuthAuthenticated || v.Signers != 1 || v.Signatures[1].Status != SigDuplicate || v.Signatures[0].Signer != v.Signatures[1].Signer {
			t.Errorf("label %q: %s, %d signers, %+v", labels.KeyID(), v.Authentication, v.Signers, v.Signatures)
		}
	}
	k2, _ := testKeys(t, keyring.AlgEd25519)
	s2, _ := k2.ActiveSigner()
	t2, _ := k2.ExportTrust()
	if err := trust.Merge(t2); err != nil {
		t.Fatal(err)
	}
	v := verifyWith(t, signedAudit(t, s, s2), keyring.NewVerifier(nil, trust, nil), false)
	if v.Signers != 2 {
		t.Errorf("two keys: %d signers", v.Signers)
	}
}

// Revocation wins: a key revoked in the keyring cannot vouch for an audit
// (exit 3), whatever a trust file given beside it says.
func TestAuditRevokedKeyTampered(t *testing.T) {
	k, path := testKeys(t, keyring.AlgEd25519)
	s, _ := k.ActiveSigner()
	data := signedAudit(t, s)
	trust, _ := k.ExportTrust() // before the revocation
	if _, err := keyring.Revoke(path, keyring.Options{}, s.KeyID()); err != nil {
		t.Fatal(err)
	}
	revoked, err := keyring.Open(path, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alias := trust.Keys[0]
	alias.KeyID = "alias"
	aliased := signedAudit(t, relabel{s, "alias"})
	hk, hpath := testKeys(t, keyring.AlgHMAC)
	hs, _ := hk.ActiveSigner()
	hdata := signedAudit(t, hs)
	if _, err := keyring.Revoke(hpath, keyring.Options{}, hs.KeyID()); err != nil {
		t.Fatal(err)
	}
	hrevoked, _ := keyring.Open(hpath, keyring.Options{})
	tests := []struct {
		name string
		data []byte
		keys *keyring.Verifier
	}{
		{"keyring alone", data, keyring.NewVerifier(revoked, nil, nil)},
		{"trust file lists it unrevoked, same id", data, keyring.NewVerifier(revoked, trust, nil)},
		{"trust file lists it unrevoked under another id", aliased, keyring.NewVerifier(revoked, &keyring.TrustSet{Keys: []keyring.TrustedKey{alias}}, nil)},
		{"hmac", hdata, keyring.NewVerifier(hrevoked, nil, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyWith(t, tt.data, tt.keys, false)
			if v.Authentication != AuthTampered || v.Signatures[0].Status != SigRevoked || exitcode.Of(v.Err()) != exitcode.Tampered || !v.Complete {
				t.Errorf("%s %+v exit %v", v.Authentication, v.Signatures, exitcode.Of(v.Err()))
			}
		})
	}
	// the control: the same trust file alone (no revocation known) vouches
	if v := verifyWith(t, aliased, keyring.NewVerifier(nil, &keyring.TrustSet{Keys: []keyring.TrustedKey{alias}}, nil), false); v.Authentication != AuthAuthenticated {
		t.Errorf("control: %s", v.AuthString())
	}
}

// Signature records are framed like the rest: after the complete record
// only, strictly parsed.
func TestAuditSignatureRecordFraming(t *testing.T) {
	k, _ := testKeys(t, keyring.AlgHMAC)
	s, _ := k.ActiveSigner()
	ls := lines(signedAudit(t, s))
	n := len(ls)
	sig := ls[n-1]
	join := func(parts ...string) []byte { return []byte(strings.Join(parts, "")) }
	tests := []struct {
		name, reason, detail string
		data                 []byte
	}{
		{"signature before complete", IncompleteOutOfOrder, "before the complete record", join(append(append(append([]string{}, ls[:n-2]...), sig), ls[n-2])...)},
		{"a check after the signature", IncompleteOutOfOrder, "after the signature records", join(append(append([]string{}, ls...), ls[1])...)},
		{"unknown member", IncompleteMalformed, "$.note: unknown field", join(append(append([]string{}, ls[:n-1]...), strings.Replace(sig, `{`, `{"note":1,`, 1))...)},
		{"unknown algorithm", IncompleteMalformed, "$.alg: unknown algorithm", join(append(append([]string{}, ls[:n-1]...), strings.Replace(sig, `"alg":"hmac-sha256"`, `"alg":"x"`, 1))...)},
		{"keyId in another case", IncompleteMalformed, `$.keyId: member name "keyId" differs from "KeyId"`, join(append(append([]string{}, ls[:n-1]...), strings.Replace(sig, `{`, `{"KeyId":"x",`, 1))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyWith(t, tt.data, keyring.NewVerifier(k, nil, nil), false)
			if v.Complete || v.Reason != tt.reason || !strings.Contains(v.Detail, tt.detail) {
				t.Errorf("%s", v)
			}
		})
	}
}

// Duplicate member names in audit lines, at any depth and in another
// letter case, are refused with file:line and field.
func TestAuditDuplicateNamesRefused(t *testing.T) {
	ls := lines(sampleAudit(t))
	n := len(ls)
	with := func(i int, old, new string) []byte {
		out := append([]string{}, ls...)
		if !strings.Contains(out[i], old) {
			t.Fatalf("line %d lacks %q", i+1, old)
		}
		out[i] = strings.Replace(out[i], old, new, 1)
		return []byte(strings.Join(out, ""))
	}
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"type twice", `audit.ndjson:1: malformed-line: $.type: member name "type" appears twice`, with(0, `{`, `{"type":"complete",`)},
		{"Type beside type", `audit.ndjson:1: malformed-line: $.type: member name "type" differs from "Type"`, with(0, `{`, `{"Type":"check",`)},
		{"checkId in another case", `audit.ndjson:2: malformed-line: $.checkId: member name "checkId" differs from "CheckID"`, with(1, `"checkId"`, `"CheckID":"chk_x","checkId"`)},
		{"nested duplicate", `audit.ndjson:3: malformed-line: $.input.candidate.message.text: member name "text" appears twice`, with(2, `"text":`, `"text":"x","text":`)},
		{"nested case variant", `audit.ndjson:3: malformed-line: $.input.candidate.message.text: member name "text" differs from "Text"`, with(2, `"text":`, `"Text":"x","text":`)},
		{"in an array element", `$.trace[0].key: member name "key" differs from "Key"`, with(2, `"trace":[{`, `"trace":[{"Key":"k",`)},
		{"complete record", fmtLine(n) + `: malformed-line: $.sha256: member name "sha256" appears twice`, with(n-1, `"sha256":`, `"sha256":"x","sha256":`)},
		{"activation record", fmtLine(n-1) + `: malformed-line: $.addedRuleIds: member name "addedRuleIds" differs from "addedRuleIDs"`, with(n-2, `"addedRuleIds"`, `"addedRuleIDs":[],"addedRuleIds"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := VerifyAudit(bytes.NewReader(tt.data), "audit.ndjson", nil)
			if err != nil {
				t.Fatal(err)
			}
			// the line is named with the column of the second member name
			want := regexp.MustCompile(strings.Replace(regexp.QuoteMeta(tt.want), ": malformed-line", `:\d+: malformed-line`, 1))
			if v.Complete || !want.MatchString(v.String()) || exitcode.Of(v.Err()) != exitcode.Incomplete {
				t.Errorf("got %s\nwant %s", v, tt.want)
			}
		})
	}
}

func fmtLine(n int) string {
	b, _ := json.Marshal(n)
	return "audit.ndjson:" + string(b)
}

// redigest rewrites the complete record's sha256 to match the check and
// activation lines, as a forger would.
func redigest(t *testing.T, ls []string) []byte {
	t.Helper()
	h := sha256.New()
	for _, l := range ls[1 : len(ls)-1] {
		h.Write([]byte(l))
	}
	last := ls[len(ls)-1]
	i := strings.Index(last, `"sha256":"`) + len(`"sha256":"`)
	ls[len(ls)-1] = last[:i] + hex.EncodeToString(h.Sum(nil)) + last[i+64:]
	return []byte(strings.Join(ls, ""))
}

// The recorded provider and the graph overlay read audits through the same
// strict reader: a trace judgment with "Choice" beside "choice" is refused
// even in a snapshot whose digest was recomputed to match.
func TestAuditConsumersRefuseCaseVariants(t *testing.T) {
	ls := lines(sampleAudit(t))
	found := false
	for i, l := range ls {
		if j := strings.Index(l, `"trace":[{"choice"`); j >= 0 {
			ls[i] = strings.Replace(l, `"trace":[{"choice"`, `"trace":[{"Choice":"no","choice"`, 1)
			found = true
			break
		}
	}
	if !found {
		t.Fatal("no trace judgment in the sample")
	}
	data := redigest(t, ls)
	p := filepath.Join(t.TempDir(), "a.ndjson")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadJudgments(p)
	if exitcode.Of(err) != exitcode.Incomplete || !strings.Contains(err.Error(), `$.trace[0].choice: member name "choice" differs from "Choice"`) {
		t.Errorf("recorded provider: %v", err)
	}
	// the control: the re-digested file without the variant is complete
	clean := lines(sampleAudit(t))
	if v, _ := VerifyAudit(bytes.NewReader(redigest(t, clean)), "a", nil); !v.Complete {
		t.Errorf("control: %s", v)
	}
}
