package capture

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func TestParseHeaderLines(t *testing.T) {
	h, err := ParseHeaderLines([]string{"Authorization: Bearer a:b ", "x-test:1", "X-Test: 2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("Authorization"); got != "Bearer a:b" {
		t.Fatalf("Authorization = %q", got)
	}
	if got := h.Values("X-Test"); len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("X-Test = %q", got)
	}
	for _, bad := range []string{"Authorization Bearer x", ": v", "X A: v", "X\tA: v", ""} {
		_, err := ParseHeaderLines([]string{"Ok: 1", bad})
		if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "not 'Name: value'") {
			t.Errorf("%q: err = %v (code %d), want a usage error", bad, err, exitcode.Of(err))
		}
	}
}

// FuzzParseHeaderLines: any line is a header or a usage error, never a
// panic; an accepted line's name is kept, trimmed, as a header.
func FuzzParseHeaderLines(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer x", "X:", "no colon", " : x", "A B: c", "K: v: w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHeaderLines([]string{line})
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("%q: %v is not a usage error", line, err)
			}
			return
		}
		name, _, _ := strings.Cut(line, ":")
		if _, ok := h[http.CanonicalHeaderKey(strings.TrimSpace(name))]; !ok {
			t.Fatalf("%q: header %q missing from %v", line, name, h)
		}
	})
}
