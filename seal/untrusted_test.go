package seal

import (
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// "untrusted" is signed when given, survives the seal file and a re-read,
// and an edit breaks the signature; a seal without it keeps its bytes.
func TestUntrustedSignedAndRoundTrips(t *testing.T) {
	spec := `{"system_prompt": "p", "tools": [{"name": "read_text_file"}],
 "untrusted": ["tool:fetch", "tool:read_text_file:read:/work/inbox/**", "resource:file:///work/inbox/**"]}`
	sp, err := ParseSpec([]byte(spec), "agent.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBody(sp, BodyOptions{Getenv: func(k string) string {
		return map[string]string{"ATW_WITNESS_TS": "2026-08-30T14:33:00+00:00"}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := b.canonicalBody()
	if !strings.Contains(string(body), `"untrusted":["tool:fetch","tool:read_text_file:read:/work/inbox/**","resource:file:///work/inbox/**"]`) {
		t.Fatalf("body %s", body)
	}
	signer, _ := keyring.LegacySigner(zeroKey)
	s, err := Sign(b, signer)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := s.Marshal()
	back, err := Parse(file, "seal.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Untrusted) != 3 {
		t.Fatalf("re-read %+v", back.Body)
	}
	if _, err := Verify(back, VerifyOptions{LegacyKeyHex: zeroKey}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	back.Untrusted = back.Untrusted[:2]
	if _, err := Verify(back, VerifyOptions{LegacyKeyHex: zeroKey}); exitcode.Of(err) != exitcode.Tampered {
		t.Fatalf("edited untrusted: %v", err)
	}
	if fx := loadFixture(t); fx.Untrusted != nil {
		t.Fatal("0.1.0 fixture read with untrusted")
	}
}

func TestUntrustedErrors(t *testing.T) {
	for member, want := range map[string]string{
		`"untrusted": ["fetch"]`:                   `$.untrusted[0]: want tool:NAME`,
		`"untrusted": ["tool:"]`:                   `$.untrusted[0]: want tool:NAME`,
		`"untrusted": ["tool:a:"]`:                 `the scope is empty`,
		`"untrusted": ["resource:/etc/**"]`:        `no URI scheme`,
		`"untrusted": ["url:https://x"]`:           `unknown source kind "url"`,
		`"untrusted": ["tool:fetch","tool:fetch"]`: `is listed twice`,
	} {
		spec := `{"system_prompt": "p", "tools": [{"name": "a"}], ` + member + `}`
		_, err := ParseSpec([]byte(spec), "agent.json", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", member, err, want)
		}
	}
	if u, err := ParseUntrusted("tool:read_text_file:read:/work/inbox/**"); err != nil || u.Tool != "read_text_file" || u.Scope != "read:/work/inbox/**" {
		t.Fatalf("%+v %v", u, err)
	}
}

// FuzzParseUntrusted: any entry parses or is refused, never panics, and a
// parsed entry names a tool or a resource pattern.
func FuzzParseUntrusted(f *testing.F) {
	for _, s := range []string{"tool:fetch", "tool:read_text_file:read:/work/inbox/**", "resource:file:///work/**", "resource:", "tool::", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUntrusted(s)
		if err == nil && u.Tool == "" && u.Resource == nil {
			t.Fatalf("%q parsed to nothing", s)
		}
	})
}
