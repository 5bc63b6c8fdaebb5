package seal

import (
	"errors"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// A seal without the MCP surface members is byte for byte 0.1.0's: the
// fixture's body, signature and seal_ref are unchanged, and its members stay
// nil (not said), never empty.
func TestSurfaceAbsentKeepsFixtureBytes(t *testing.T) {
	s := loadFixture(t)
	if s.Resources != nil || s.Prompts != nil || s.Sampling != nil || s.Elicitation != nil {
		t.Fatalf("0.1.0 fixture read with surface members: %+v", s.Body)
	}
	body, _ := s.canonicalBody()
	for _, k := range []string{"resources", "prompts", "sampling", "elicitation"} {
		if strings.Contains(string(body), `"`+k+`"`) {
			t.Errorf("absent %s appears in the body %s", k, body)
		}
	}
	if _, err := Verify(s, VerifyOptions{LegacyKeyHex: zeroKey}); err != nil {
		t.Errorf("fixture does not verify: %v", err)
	}
	if s.Ref() != fixtureRef {
		t.Errorf("ref %s, want %s", s.Ref(), fixtureRef)
	}
}

const surfaceSpec = `{"system_prompt": "p",
 "tools": [{"name": "read_file", "scopes": ["read:/data/**"]}],
 "resources": ["file:///data/**", "memo://insights"],
 "prompts": [],
 "sampling": false,
 "elicitation": true}`

// Each member is signed when present; an explicit empty list survives the
// spec, the body, the seal file and a re-read (empty means nothing is
// allowed, absent means not checked); editing any member breaks the
// signature and changes the ref.
func TestSurfaceSignedAndRoundTrips(t *testing.T) {
	sp, err := ParseSpec([]byte(surfaceSpec), "agent.json", nil)
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
	want := `{"created_at":"2026-08-30T14:33:00+00:00","elicitation":true,"prompts":[],"resources":["file:///data/**","memo://insights"],"sampling":false,`
	if !strings.HasPrefix(string(body), want) {
		t.Fatalf("body %s\nwant prefix %s", body, want)
	}
	signer, _ := keyring.LegacySigner(zeroKey)
	s, err := Sign(b, signer)
	if err != nil {
		t.Fatal(err)
	}
	file, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), `"prompts": []`) {
		t.Errorf("seal file lost the empty prompts list:\n%s", file)
	}
	back, err := Parse(file, "seal.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Prompts == nil || len(back.Prompts) != 0 || len(back.Resources) != 2 || *back.Sampling || !*back.Elicitation {
		t.Fatalf("re-read %+v", back.Body)
	}
	if _, err := Verify(back, VerifyOptions{LegacyKeyHex: zeroKey}); err != nil {
		t.Fatalf("re-read seal does not verify: %v", err)
	}
	ref := back.Ref()
	edits := map[string]func(s *Sealed){
		"sampling flipped":      func(s *Sealed) { v := true; s.Sampling = &v },
		"elicitation dropped":   func(s *Sealed) { s.Elicitation = nil },
		"prompts dropped":       func(s *Sealed) { s.Prompts = nil },
		"resource widened":      func(s *Sealed) { s.Resources = []string{"file:///**", "memo://insights"} },
		"resources emptied":     func(s *Sealed) { s.Resources = []string{} },
		"resources not checked": func(s *Sealed) { s.Resources = nil },
	}
	for name, edit := range edits {
		c, _ := Parse(file, "seal.json")
		edit(c)
		if _, err := Verify(c, VerifyOptions{LegacyKeyHex: zeroKey}); exitcode.Of(err) != exitcode.Tampered {
			t.Errorf("%s: verify = %v, want tampered", name, err)
		}
		if c.Ref() == ref {
			t.Errorf("%s: the ref did not change", name)
		}
	}
}

func TestSurfaceSpecErrors(t *testing.T) {
	tests := []struct{ member, want string }{
		{`"resources": "file:///data/**"`, `agent.json:1:63: $.resources: want a array, got string`},
		{`"resources": ["file:///data/**", "/etc/**"]`, `agent.json:1:83: $.resources[1]: resource pattern "/etc/**": no URI scheme`},
		{`"resources": ["file:///data/../etc/**"]`, `$.resources[0]: resource pattern "file:///data/../etc/**": a ".." segment`},
		{`"resources": ["https://*.example.com/**"]`, `wildcards are allowed only in the path`},
		{`"resources": ["memo://a", "memo://a"]`, `$.resources[1]: "memo://a" is listed twice`},
		{`"resources": [null]`, `$.resources[0]: want a string, got null`},
		{`"prompts": [""]`, `$.prompts[0]: a prompt name must be non-empty`},
		{`"sampling": "no"`, `$.sampling: want a boolean, got string`},
		{`"elicitation": null`, `$.elicitation: want a boolean, got null`},
		{`"roots": []`, `$.roots: unknown field`},
	}
	for _, tt := range tests {
		spec := `{"system_prompt": "p", "tools": [{"name": "a"}], ` + tt.member + `}`
		_, err := ParseSpec([]byte(spec), "agent.json", nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.member, err, tt.want)
			continue
		}
		var ec *exitcode.Error
		if !errors.As(err, &ec) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: not a usage error: %v", tt.member, err)
		}
	}
}

// A seal file holding a pattern that does not parse is invalid evidence.
func TestSurfaceSealErrors(t *testing.T) {
	s := loadFixture(t)
	s.Resources = []string{"no-scheme"}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(b, "seal.json")
	if exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), "$.resources[0]: resource pattern") {
		t.Errorf("err %v", err)
	}
}
