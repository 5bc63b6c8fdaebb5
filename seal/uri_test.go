package seal

import (
	"strings"
	"testing"
)

func TestResourcePatternMatch(t *testing.T) {
	tests := []struct {
		pattern, uri string
		want         bool
		reason       string // part of the reason a URI cannot be placed
	}{
		{"file:///data/**", "file:///data/x.txt", true, ""},
		{"file:///data/**", "file:///data", true, ""},
		{"file:///data/**", "file:///data/", true, ""},
		{"file:///data/**", "file:///data/a/b/c", true, ""},
		{"file:///data/**", "file:///database/x", false, ""},
		{"file:///data/**", "file:///etc/passwd", false, ""},
		// dot segments are resolved before matching
		{"file:///data/**", "file:///data/../etc/passwd", false, ""},
		{"file:///data/**", "file:///data/./x/../y", true, ""},
		{"file:///data/**", "file:///data/%2e%2e/etc/passwd", false, ""},
		{"file:///data/**", "file:///data/.%2E/.%2e/etc/passwd", false, ""},
		{"file:///data/**", "file:///data/x/..", true, ""},
		{"file:///data/**", "file:///../../data/x", true, ""},
		// an encoded slash, backslash or NUL cannot be placed
		{"file:///data/**", "file:///data/..%2F..%2Fetc/passwd", false, `encoded "/"`},
		{"file:///data/**", "file:///data/..%2f..%2fetc/passwd", false, `encoded "/"`},
		{"file:///data/**", "file:///data/%5C..%5Cetc", false, `encoded "\\"`},
		{"file:///data/**", "file:///data/x%00.txt", false, `encoded "\x00"`},
		{"file:///data/**", `file:///data/..\..\etc\passwd`, false, "backslash"},
		{"file:///data/**", "file:///data/%zz", false, "malformed percent-encoding"},
		{"file:///data/**", "file:///data/x%", false, "malformed percent-encoding"},
		{"file:///data/**", "file:///data/%C3", false, "not UTF-8"},
		{"file:///data/**", "file:///data//../etc/passwd", false, "empty path segment"},
		{"file:///data/**", "file:///data/ x", false, "control character or space"},
		{"file:///data/**", " file:///data/x", false, "control character or space"},
		{"file:///data/**", "/data/x", false, "no URI scheme"},
		{"file:///data/**", "", false, "empty"},
		// unreserved and non-ASCII escapes are decoded; others keep upper-case hex
		{"file:///data/**", "file:///%64ata/x", true, ""},
		{"file:///data/caf%C3%A9.txt", "file:///data/café.txt", true, ""},
		{"file:///data/a%20b", "file:///data/a%20b", true, ""},
		{"file:///data/a%20b", "file:///data/a%2b", false, ""},
		{"file:///data/a%3Fb", "file:///data/a%3fb", true, ""},
		// scheme and host are case-insensitive, the path is not
		{"file:///data/**", "FILE:///data/x", true, ""},
		{"file:///data/**", "File:///DATA/x", false, ""},
		{"https://api.example.com/v1/**", "HTTPS://API.Example.COM/v1/x", true, ""},
		{"https://api.example.com/v1/**", "https://api.example.com:443/v1/x", true, ""},
		{"https://api.example.com/v1/**", "https://api.example.com:8443/v1/x", false, ""},
		{"https://api.example.com/v1/**", "https://api.example.com@evil.com/v1/x", false, "user info"},
		{"https://api.example.com/v1/**", "https://evil.com/api.example.com/v1/x", false, ""},
		{"https://api.example.com/v1/**", "https:api.example.com/v1/x", false, ""},
		// file: forms of the same path
		{"file:///data/**", "file:/data/x", true, ""},
		{"file:///data/**", "file://localhost/data/x", true, ""},
		{"file:///data/**", "file://otherhost/data/x", false, ""},
		{"file:///data/**", "file:data/x", false, ""},
		// * within a segment, ** across
		{"file:///data/*.txt", "file:///data/a.txt", true, ""},
		{"file:///data/*.txt", "file:///data/sub/a.txt", false, ""},
		{"file:///data/**/*.txt", "file:///data/sub/deep/a.txt", true, ""},
		// exact URIs; a trailing slash is not significant, a query is
		{"memo://insights", "memo://insights", true, ""},
		{"memo://insights", "memo://insights/", true, ""},
		{"memo://insights", "memo://insights?x=1", false, ""},
		{"memo://insights", "memo://insights/x", false, ""},
		{"test://static/resource/*", "test://static/resource/1", true, ""},
		{"test://static/resource/*", "test://static/resource/1?a=b", false, ""},
		{"db://rows/*?id=*", "db://rows/t?id=7", true, ""},
		{"db://rows/*?id=*", "db://rows/t?name=7", false, ""},
		{"db://rows/*?id=*", "db://rows/t", false, ""},
		// opaque URIs
		{"urn:isbn:*", "urn:isbn:0451450523", true, ""},
		{"urn:isbn:*", "URN:isbn:0451450523", true, ""},
		{"urn:isbn:*", "urn:issn:1", false, ""},
		{"urn:isbn:*", "urn:isbn/../x", false, "opaque path"},
		// ** alone: every URI that can be placed
		{"**", "anything:at/all", true, ""},
		{"**", "file:///data/..%2Fetc", false, `encoded "/"`},
	}
	for _, tt := range tests {
		p, err := ParseResourcePattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParseResourcePattern(%q): %v", tt.pattern, err)
		}
		got, reason := p.Match(tt.uri)
		if got != tt.want {
			t.Errorf("%q.Match(%q) = %v (%s), want %v", tt.pattern, tt.uri, got, reason, tt.want)
		}
		if tt.reason == "" && reason != "" {
			t.Errorf("%q.Match(%q): unexpected reason %q", tt.pattern, tt.uri, reason)
		}
		if tt.reason != "" && !strings.Contains(reason, tt.reason) {
			t.Errorf("%q.Match(%q): reason %q, want it to mention %q", tt.pattern, tt.uri, reason, tt.reason)
		}
	}
}

func TestParseResourcePatternErrors(t *testing.T) {
	for _, s := range []string{
		"", "/data/**", "data/**", "file:///data/../**", "file:///data/a**", "*://x/y", "https://*.example.com/**",
		"file:///data/%2F", `file:///data\x`, "file:///da ta", "https://u@host/x", "file:///data//x",
	} {
		if _, err := ParseResourcePattern(s); err == nil {
			t.Errorf("ParseResourcePattern(%q): no error", s)
		}
	}
}

func TestNormalizeURI(t *testing.T) {
	for in, want := range map[string]string{
		"FILE://LocalHost/data/%7euser/./a/../b": "file:///data/~user/b",
		"HTTPS://Example.COM:443":                "https://example.com/",
		"http://example.com:80/a%2cb":            "http://example.com/a%2Cb",
		"urn:ISBN:1":                             "urn:ISBN:1",
		// a C1 control stays encoded: written raw it cannot be placed
		"A:0000%C2%80":          "a:0000%C2%80",
		"memo://x/%c2%9f%C3%A9": "memo://x/%C2%9Fé",
	} {
		n, err := NormalizeURI(in)
		if err != nil || n.String() != want {
			t.Errorf("NormalizeURI(%q) = %q, %v; want %q", in, n.String(), err, want)
		}
	}
}
