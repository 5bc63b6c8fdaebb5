package eventlog

import (
	"testing"
)

var payloadSamples = []string{
	`"plain"`, `"emoji 🙂 tab\tsep \"q\" back\\slash"`, `"\u001f\u0000"`, `"\u000a"`, `"\/"`, `"\u00e9"`,
	`{}`, `[]`, `{"a":1,"b":[true,false,null],"c":{"d":"x"}}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
	`123456789012345`, `1234567890123456`, `-0`, `0`, `-12`, `012`, `1.5`, `1e3`, `{"é":1}`, `{"a\"":1}`,
	` "x"`, `"x" `, `{"a": 1}`, `[1,2,]`, `"\ud800"`, "\"\xff\"", `"a`, `{"a":1`, `tru`, `nul`, `truex`,
	`{"content":[{"text":"x","type":"text"}],"isError":false}`,
}

// TestPayloadSHA256 holds the fast hash to PayloadDigest on samples, and
// checks that the canonical ones take the fast path.
func TestPayloadSHA256(t *testing.T) {
	for _, s := range payloadSamples {
		payloadSame(t, []byte(s))
	}
	for _, s := range []string{`"plain"`, `{"a":1,"b":[true,false,null],"c":{"d":"x"}}`, `"\u001f\u0000"`, `-12`, `{"content":[{"text":"x","type":"text"}],"isError":false}`} {
		if !isCanonical([]byte(s)) {
			t.Errorf("%s: canonical, but not seen as such", s)
		}
	}
	for _, s := range []string{`{"b":1,"a":2}`, `"\u000a"`, `"\/"`, `1.5`, ` "x"`, `{"a":1,"a":2}`} {
		if isCanonical([]byte(s)) {
			t.Errorf("%s: not canonical, but seen as such", s)
		}
	}
}

func payloadSame(t *testing.T, b []byte) {
	t.Helper()
	_, want, werr := PayloadDigest(b)
	got, gerr := payloadSHA256(b)
	if (werr != nil) != (gerr != nil) || got != want {
		t.Fatalf("%q: fast %s %v, PayloadDigest %s %v", b, got, gerr, want, werr)
	}
	if isCanonical(b) {
		if c, _, err := PayloadDigest(b); err != nil || string(c) != string(b) {
			t.Fatalf("%q seen as canonical, canon gives %q %v", b, c, err)
		}
	}
}

// FuzzPayloadSHA256: on any bytes, the fast payload hash is PayloadDigest's
// (same hex, an error exactly when it fails), and what isCanonical accepts
// canon.Transform leaves unchanged.
func FuzzPayloadSHA256(f *testing.F) {
	for _, s := range payloadSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		payloadSame(t, b)
	})
}
