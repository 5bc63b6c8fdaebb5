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
