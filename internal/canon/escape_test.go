package canon

import (
	"encoding/json"
	"testing"
)

func TestAppendEscape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		e    Escape
	}{
		{`\n`, "\n", Escape{N: 2}},
		{`\/x`, "/", Escape{N: 2}},
		{`\u00e9`, "é", Escape{N: 6}},
		{`\ud83d\ude00`, "😀", Escape{N: 12}},
		{`\ud83dx`, "\uFFFD", Escape{N: 6, Status: EscapeLone, R: 0xd83d}},
		{`\ude00`, "\uFFFD", Escape{N: 6, Status: EscapeLone, R: 0xde00}},
		{`\ud83d\u0041`, "\uFFFD", Escape{N: 6, Status: EscapeLone, R: 0xd83d}},
		{`\`, "", Escape{Status: EscapeEOF}},
		{`\u12`, "", Escape{Status: EscapeBadHex, Short: true}},
		{`\u12zz`, "", Escape{Status: EscapeBadHex}},
		{`\x`, "", Escape{Status: EscapeInvalid, R: 'x'}},
	} {
		got, e := AppendEscape([]byte("<"), []byte(tc.in))
		if string(got) != "<"+tc.want || e != tc.e {
			t.Errorf("AppendEscape(%q) = %q, %+v; want %q, %+v", tc.in, got, e, "<"+tc.want, tc.e)
		}
	}
}

// FuzzAppendEscape: what AppendEscape decodes is what encoding/json
// decodes from the same escape, and what it refuses encoding/json refuses.
func FuzzAppendEscape(f *testing.F) {
	for _, s := range []string{`\n`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\ude00x`, `\u12`, `\q`, `\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '\\' {
			return
		}
		out, e := AppendEscape(nil, b)
		switch e.Status {
		case EscapeOK, EscapeLone:
			if e.N < 2 || e.N > len(b) {
				t.Fatalf("AppendEscape(%q) consumed %d bytes", b, e.N)
			}
			var s string
			if err := json.Unmarshal([]byte(`"`+string(b[:e.N])+`"`), &s); err != nil || s != string(out) {
				t.Fatalf("AppendEscape(%q) = %q (%+v); encoding/json reads %q, %v", b, out, e, s, err)
			}
		default:
			if out != nil {
				t.Fatalf("AppendEscape(%q) refused (%+v) but appended %q", b, e, out)
			}
			var s string
			n := min(len(b), 6)
			if err := json.Unmarshal([]byte(`"`+string(b[:n])+`"`), &s); err == nil {
				t.Fatalf("AppendEscape(%q) refused (%+v) what encoding/json reads as %q", b, e, s)
			}
		}
	})
}
