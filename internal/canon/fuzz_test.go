package canon

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzTransform: Transform never panics; what it accepts is valid UTF-8
// JSON, and canonicalizing its output again changes nothing.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`[1e400]`, `"\ud800"`, `{"a":1,"a":2}`, `-0`, `12345678901234567890`, "\"\u2028<>&\x7f\"", `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Transform(in)
		if err != nil {
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("output is not valid UTF-8 JSON: %q", out)
		}
		again, err := Transform(out)
		if err != nil {
			t.Fatalf("canonical output refused: %v (%q)", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
	})
}

// FuzzTransformDifferential: the hand-written parser and the reference
// implementation built on encoding/json's tokenizer agree on every input:
// both refuse it, or both give the same bytes.
func FuzzTransformDifferential(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.50,-0,1e400],"a":"\u00e9\ud83d\ude00\n"}`, `[1.e5]`, `[01]`, `{"a" 1}`, `[1,]`, `"\x01"`, `{"a":1,"a":1}`,
		`[true,false,null]`, `[tru]`, `"\/\b"`, "\"\t\"", `[-]`, `[1E+2,1e-2]`, `  {}  `, `{"\u0000":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gerr := Transform(in)
		want, werr := transformRef(in)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("input %q: parser err %v, reference err %v", in, gerr, werr)
		}
		if gerr == nil && string(got) != string(want) {
			t.Fatalf("input %q: parser %q, reference %q", in, got, want)
		}
	})
}
