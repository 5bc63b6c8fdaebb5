package seal

import (
	"os"
	"testing"
)

// FuzzParse: the seal parser never panics; what it accepts re-marshals and
// re-parses to the same seal.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(fixturePath); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"created_at":"t","signature":"ed25519:AAAA","system_prompt_sha256":"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b","tools":[{"name":"a","scopes":[]}],"witness_id":"w","key_id":"k","cosignatures":[{"key_id":"k2","alg":"ed25519","sig":"x"}]}`))
	f.Add([]byte(`{"tools":[{"name":"\ud800"}]}`))
	f.Add([]byte(`[`))
	f.Add([]byte(`{"created_at":"t","elicitation":false,"prompts":[],"resources":["file:///data/**"],"sampling":true,"signature":"hmac-sha256:00","system_prompt_sha256":"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b","tools":[{"name":"a","scopes":[]}],"witness_id":"w"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		_ = s.Ref()
		b, err := s.Marshal()
		if err != nil {
			t.Fatalf("accepted seal does not marshal: %v", err)
		}
		s2, err := Parse(b, "again.json")
		if err != nil {
			t.Fatalf("re-marshalled seal refused: %v\n%s", err, b)
		}
		if s2.Ref() != s.Ref() {
			t.Fatalf("seal_ref changed across a round trip")
		}
	})
}

// FuzzParseSpec: the agent spec parser never panics.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(`{"system_prompt":"p","tools":[{"name":"read_file","scopes":["read:/data/**"]}],"witness_id":"w"}`))
	f.Add([]byte(`{"system_prompt_file":"p.txt","tools":[{"name":"a","definition_sha256":"00"}]}`))
	f.Add([]byte(`{"tools":[{"name":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := ParseSpec(data, "fuzz.json", func(string) ([]byte, error) { return []byte("prompt"), nil })
		if err != nil {
			return
		}
		if sp.SystemPrompt == "" || len(sp.Tools) == 0 {
			t.Fatalf("accepted a spec without prompt or tools: %+v", sp)
		}
		if _, err := NewBody(sp, BodyOptions{}); err != nil {
			t.Fatalf("accepted spec makes no body: %v", err)
		}
	})
}

// FuzzVerifyEnvelope: the DSSE envelope reader never panics and never
// returns a seal without an error from a forged or mangled envelope.
func FuzzVerifyEnvelope(f *testing.F) {
	f.Add([]byte(`{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"k","sig":"AAAA"}]}`))
	f.Add([]byte(`{"payload":"!","payloadType":"x","signatures":[]}`))
	trust := &trustSet{Keys: nil}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := VerifyEnvelope(data, "fuzz.intoto.jsonl", trust)
		if err == nil || s != nil {
			t.Fatalf("an envelope verified with an empty trust set: %v", s)
		}
	})
}

// FuzzResourcePattern: the URI pattern parser and the URI normalizer never
// panic; a pattern that parses matches, or not, with no reason unless the
// URI cannot be placed; normalizing is idempotent; and a URI that cannot
// be placed matches no pattern, not even "**".
func FuzzResourcePattern(f *testing.F) {
	f.Add("file:///data/**", "file:///data/../etc/passwd")
	f.Add("memo://insights", "MEMO://insights/")
	f.Add("db://rows/*?id=*", "db://rows/t?id=%41")
	f.Add("urn:isbn:*", "urn:isbn:..%2F")
	f.Add("**", "file:///data/%C3%A9")
	f.Fuzz(func(t *testing.T, pattern, uri string) {
		n, nerr := NormalizeURI(uri)
		if nerr == nil {
			again, err := NormalizeURI(n.String())
			if err != nil || again.String() != n.String() {
				t.Fatalf("normalizing %q twice: %q, %v (first %q)", uri, again.String(), err, n.String())
			}
		}
		p, err := ParseResourcePattern(pattern)
		if err != nil {
			return
		}
		ok, reason := p.Match(uri)
		if (nerr != nil) != (reason != "") || (nerr != nil && ok) {
			t.Fatalf("%q.Match(%q) = %v, %q; NormalizeURI error %v", pattern, uri, ok, reason, nerr)
		}
		if nerr == nil && p.MatchNormalized(n) != ok {
			t.Fatalf("MatchNormalized differs from Match")
		}
	})
}
