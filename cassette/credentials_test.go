package cassette

import (
	"strings"
	"testing"
)

func fakeHash(v []byte) string {
	return "redacted:hmac-sha256:" + strings.Repeat("0", 63) + string(rune('a'+len(v)%6))
}

func TestRedactQuery(t *testing.T) {
	secret, _ := NameSet(CredentialParams, []string{"X-Mine"})
	for _, tc := range []struct{ in, want string }{
		{"/v1/models", "/v1/models"},
		{"/v1/x?alt=sse", "/v1/x?alt=sse"},
		{"/v1/x?key=SECRET1&alt=sse", "/v1/x?key=" + fakeHash([]byte("SECRET1")) + "&alt=sse"},
		{"/v1/x?API-Key=S2&access_token=S3", "/v1/x?API-Key=" + fakeHash([]byte("S2")) + "&access_token=" + fakeHash([]byte("S3"))},
		{"/v1/x?api%2Dkey=S%32", "/v1/x?api%2Dkey=" + fakeHash([]byte("S2"))},
		{"/v1/x?x-mine=S4", "/v1/x?x-mine=" + fakeHash([]byte("S4"))},
		{"/v1/x?key=&key&token=", "/v1/x?key=&key&token="},
		{"/v1/x?keys=a&monkey=b", "/v1/x?keys=a&monkey=b"},
		{"/v1/x?key=" + fakeHash(nil), "/v1/x?key=" + fakeHash(nil)},
		{"/v1/x?key=redacted:hmac-sha256:ab", "/v1/x?key=" + fakeHash([]byte("redacted:hmac-sha256:ab"))},
		{"https://h/mcp?token=S5#f", "https://h/mcp?token=" + fakeHash([]byte("S5")) + "#f"},
		{"/v1/x?key=%zz", "/v1/x?key=" + fakeHash([]byte("%zz"))},
	} {
		got, red := RedactQuery(tc.in, secret, fakeHash)
		if got != tc.want || red != (tc.in != tc.want) {
			t.Errorf("RedactQuery(%q) = %q, %v; want %q", tc.in, got, red, tc.want)
		}
		if again, red2 := RedactQuery(got, secret, fakeHash); again != got || red2 {
			t.Errorf("RedactQuery is not idempotent on %q: %q", got, again)
		}
	}
}

func TestMaskQuery(t *testing.T) {
	secret, _ := NameSet(CredentialParams, nil)
	live := "/v1/x?key=SECRET&alt=sse"
	rec, _ := RedactQuery(live, secret, fakeHash)
	if a, b := MaskQuery(live, secret), MaskQuery(rec, secret); a != b || a != "/v1/x?key=redacted&alt=sse" {
		t.Fatalf("MaskQuery: live %q, recorded %q", a, b)
	}
}

func FuzzRedactQuery(f *testing.F) {
	f.Add("/v1/x?key=S&a=b")
	f.Add("/?%zz=1&&=&key=%41#x?key=2")
	secret, _ := NameSet(CredentialParams, nil)
	f.Fuzz(func(t *testing.T, s string) {
		got, red := RedactQuery(s, secret, fakeHash)
		if !red && got != s {
			t.Fatalf("changed without saying so: %q -> %q", s, got)
		}
		if again, _ := RedactQuery(got, secret, fakeHash); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
		if i := strings.IndexByte(s, '?'); i >= 0 && got[:i] != s[:i] {
			t.Fatalf("path changed: %q -> %q", s, got)
		}
	})
}
