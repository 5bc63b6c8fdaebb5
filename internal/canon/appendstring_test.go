package canon

import (
	"bytes"
	"testing"
)

// FuzzAppendString: AppendString writes writeString's bytes (and refuses
// what it refuses), after whatever dst held.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t\x00\x1f\x7f", "é𝄞", "\xff", "a\x01b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		werr := writeString(&want, s)
		got, err := AppendString([]byte("x"), s)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, writeString %v", s, err, werr)
		}
		if err == nil && !bytes.Equal(got, append([]byte("x"), want.Bytes()...)) {
			t.Fatalf("%q: %q, writeString %q", s, got, want.Bytes())
		}
	})
}
