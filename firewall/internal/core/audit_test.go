package core

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

func sampleAudit(t testing.TB) []byte {
	t.Helper()
	p := mustPolicy(t, pol("enforcement", codeIn, codeOut, `"english":{"initialRules":[`+normRule+`]},`+jevProv))
	var buf bytes.Buffer
	evalAll(t, p, tableProvider{}, &buf, sampleMessagesFor("agent:me")...)
	return buf.Bytes()
}

func lines(b []byte) []string {
	out := strings.SplitAfter(string(b), "\n")
	if len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// "The org.social-harness/firewall-audit/v4 format has one start, zero or
// more check records, zero or more activation records, and one complete
// record ... Missing or malformed records, truncation, or a mismatched count
// or digest make the artifact incomplete."
func TestAuditVerify(t *testing.T) {
	good := sampleAudit(t)
	ls := lines(good)
	n := len(ls)
	if !strings.Contains(ls[n-2], `"type":"activation"`) || !strings.Contains(ls[n-1], `"type":"complete"`) {
		t.Fatalf("unexpected layout:\n%s\n%s", ls[n-2], ls[n-1])
	}
	join := func(parts ...string) []byte { return []byte(strings.Join(parts, "")) }
	without := func(i int) []byte {
		out := append(append([]string{}, ls[:i]...), ls[i+1:]...)
		return join(out...)
	}
	swap := func(i, j int) []byte {
		out := append([]string{}, ls...)
		out[i], out[j] = out[j], out[i]
		return join(out...)
	}
	replaceIn := func(i int, old, new string) []byte {
		out := append([]string{}, ls...)
		if !strings.Contains(out[i], old) {
			t.Fatalf("line %d lacks %q", i, old)
		}
		out[i] = strings.Replace(out[i], old, new, 1)
		return join(out...)
	}
	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"complete", good, ""},
		{"truncated: cut inside the complete line", good[:len(good)-20], IncompleteTruncated},
		{"truncated: cut inside a check line", join(ls[0], ls[1], ls[2][:40]), IncompleteTruncated},
		{"truncated: whole lines cut, no complete record", join(ls[:n-1]...), IncompleteMissingComplete},
		{"missing start", without(0), IncompleteMissingStart},
		{"empty file", nil, IncompleteMissingStart},
		{"reordered: two check records swapped", swap(1, 2), IncompleteDigest},
		{"reordered: activation before a check", swap(n-2, n-3), IncompleteOutOfOrder},
		{"reordered: complete before the activation", swap(n-1, n-2), IncompleteOutOfOrder},
		{"reordered: a second start", join(append([]string{ls[0]}, ls...)...), IncompleteOutOfOrder},
		{"recounted: checkCount changed", replaceIn(n-1, `"checkCount":16`, `"checkCount":15`), IncompleteCheckCount},
		{"recounted: a check removed", without(3), IncompleteCheckCount},
		{"recounted: activationCount changed", replaceIn(n-1, `"activationCount":1`, `"activationCount":2`), IncompleteActivationCount},
		{"re-digested: a check altered under the old sha256", replaceIn(2, `"disposition":"admitted"`, `"disposition":"withheld"`), IncompleteDigest},
		{"re-digested: the complete record's sha256 changed", replaceIn(n-1, `"sha256":"`, `"sha256":"0`), IncompleteDigest},
		{"mismatched snapshot id", replaceIn(n-1, `"snapshotId":"snap_`, `"snapshotId":"snap_x`), IncompleteSnapshotID},
		{"malformed line: not JSON", join(ls[0], "not json\n", ls[1]), IncompleteMalformed},
		{"malformed line: no type", join(ls[0], "{\"checkId\":\"x\"}\n"), IncompleteMalformed},
		{"malformed line: unknown type", join(ls[0], "{\"type\":\"note\"}\n"), IncompleteMalformed},
		{"malformed line: bad check reference", replaceIn(1, `"checkId":"chk_`, `"checkId":"chk_X`), IncompleteMalformed},
		{"malformed start: wrong format", replaceIn(0, "firewall-audit/v4", "firewall-audit/v3"), IncompleteMalformed},
		{"trailing record after complete", join(append(append([]string{}, ls...), ls[1])...), IncompleteOutOfOrder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := VerifyAudit(bytes.NewReader(tc.data), "audit.ndjson", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if !v.Complete || v.Err() != nil || v.CheckCount != 16 || v.ActivationCount != 1 {
					t.Fatalf("verdict %+v", v)
				}
				return
			}
			if v.Complete || v.Reason != tc.reason {
				t.Fatalf("verdict %s, want reason %s", v, tc.reason)
			}
			if exitcode.Of(v.Err()) != exitcode.Incomplete {
				t.Errorf("exit code %v", exitcode.Of(v.Err()))
			}
			if !strings.HasPrefix(v.String(), "incomplete: audit.ndjson") {
				t.Errorf("message %q", v.String())
			}
		})
	}
}

func TestAuditFilePublishAndRecordedIncomplete(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.ndjson")
	good := sampleAudit(t)
	if err := atomicfile.Publish(path, AuditFile(path, atomicfile.Options{}), func(w io.Writer) error { _, err := w.Write(good); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("published %v %v", fi, err)
	}
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Errorf("staging file left: %v", err)
	}
	rp, err := LoadJudgments(path)
	if err != nil || rp.Len() == 0 {
		t.Fatalf("recorded: %v", err)
	}
	// the recorded provider refuses an incomplete snapshot
	cut := filepath.Join(dir, "cut.ndjson")
	if err := os.WriteFile(cut, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadJudgments(cut); exitcode.Of(err) != exitcode.Incomplete {
		t.Errorf("incomplete source: %v", err)
	}
}

// The bundled judgments snapshot verifies complete.
func TestBundledAuditComplete(t *testing.T) {
	v, err := VerifyAuditFile(filepath.Join(fixtureDir, "judgments.audit.ndjson"))
	if err != nil || !v.Complete {
		t.Fatalf("%v %v", v, err)
	}
}

func FuzzVerifyAudit(f *testing.F) {
	good := sampleAudit(f)
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte("{\"type\":\"start\",\"format\":\"org.social-harness/firewall-audit/v4\",\"snapshotId\":\"s\"}\n{\"type\":\"complete\",\"snapshotId\":\"s\",\"checkCount\":0,\"activationCount\":0,\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}\n"))
	f.Add([]byte("\n\n{}"))
	// a signed snapshot, checked with the signing key
	path := filepath.Join(f.TempDir(), "keys.json")
	if _, err := keyring.Generate(path, keyring.Options{}, keyring.AlgEd25519); err != nil {
		f.Fatal(err)
	}
	k, err := keyring.Open(path, keyring.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, _ := k.ActiveSigner()
	var signed bytes.Buffer
	aw := NewAuditWriter(&signed, "s")
	if aw.Start("") != nil || aw.Complete() != nil || aw.Sign(s) != nil {
		f.Fatal("sign")
	}
	f.Add(signed.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := VerifyAuditWith(bytes.NewReader(data), "fuzz", AuditVerifyOptions{Keys: keyring.NewVerifier(k, nil, nil), Each: func(AuditLine) error { return nil }})
		if err != nil {
			t.Fatalf("I/O error from a byte slice: %v", err)
		}
		if v.Complete && (!bytes.HasSuffix(data, []byte("\n")) || v.Reason != "") {
			t.Fatalf("complete verdict for %q", data)
		}
		if v.Authentication == AuthAuthenticated && !bytes.Contains(data, []byte("signature")) {
			t.Fatalf("authenticated without a signature record: %q", data)
		}
		_ = v.String() + v.AuthString()
	})
}

func FuzzDecodePolicy(f *testing.F) {
	for _, name := range []string{"policy.json", "policy-code.json"} {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"format":"org.social-harness/message-policy/v1","mode":"guidance","english":{"fixedRules":[{"id":"a","kind":"norm","text":"t","guidance":"g"}]},"decisionProvider":{"kind":"unavailable"}}`))
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePolicy(data, "fuzz.json")
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("code %v for %v", exitcode.Of(err), err)
			}
			return
		}
		r1, err := p.ActiveRevision()
		if err != nil {
			t.Fatalf("revision: %v", err)
		}
		// decoding is stable: the same document gives the same revision
		p2, err := DecodePolicy(data, "fuzz.json")
		if err != nil {
			t.Fatal(err)
		}
		if r2, _ := p2.ActiveRevision(); r1 != r2 {
			t.Fatalf("revision differs")
		}
	})
}

func FuzzDecodeMapping(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(fixtureDir, "mapping.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format":"witness-message-mapping/v1","localAgent":"a","send":[{"tool":"t","conversation":"$.a[","text":"$"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMapping(data, "fuzz.json")
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("code %v", exitcode.Of(err))
			}
			return
		}
		if m.LocalAgent == "" {
			t.Fatalf("accepted without localAgent")
		}
	})
}
