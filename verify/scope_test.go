package verify

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"/data/**", "/data", true},
		{"/data/**", "/data/x", true},
		{"/data/**", "/data/x/y/z.txt", true},
		{"/data/**", "/database", false},
		{"/data/**", "/etc/passwd", false},
		{"/data/**", "/", false},
		{"/data/*", "/data/x", true},
		{"/data/*", "/data/x/y", false},
		{"/data/*", "/data", false},
		{"/data/*.txt", "/data/a.txt", true},
		{"/data/*.txt", "/data/a.txt.bak", false},
		{"/data/?.txt", "/data/a.txt", true},
		{"/data/?.txt", "/data/ab.txt", false},
		{"/data/?.txt", "/data/é.txt", true},
		{"/data/**/*.log", "/data/a/b/c.log", true},
		{"/data/**/*.log", "/data/c.log", true},
		{"/data/**/*.log", "/data/c.txt", false},
		{"/data/**/x/**", "/data/a/x", true},
		{"/data/**/x/**", "/data/a/x/b/c", true},
		{"/data/**/x/**", "/data/a/y/b", false},
		{"/**", "/anything/at/all", true},
		{"/**", "/", true},
		{"/", "/", true},
		{"/", "/x", false},
		{"/data/", "/data", true},
		{`/data/a\*b`, "/data/a*b", true},
		{`/data/a\*b`, "/data/axb", false},
		{"/Data/**", "/data/x", false},
		{"/data/**/**", "/data/x", true},
	}
	for _, tt := range tests {
		g, err := parseGlob(tt.glob)
		if err != nil {
			t.Fatalf("ParseGlob(%q): %v", tt.glob, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

func TestParseGlobErrors(t *testing.T) {
	for _, s := range []string{"", "data/**", "/data/../etc", "/data/./x", "/data//x", "/data/a**", "/x\x00", `/data/x\`} {
		if _, err := parseGlob(s); err == nil {
			t.Errorf("ParseGlob(%q): no error", s)
		}
	}
}

func TestParseScope(t *testing.T) {
	s, err := parseScope("read:/data/**")
	if err != nil || s.Op != opRead || s.Glob.String() != "/data/**" {
		t.Fatalf("ParseScope: %+v %v", s, err)
	}
	for _, bad := range []string{"admin", "net:api.example.com", "exec:/bin/**", "READ:/data/**"} {
		_, err := parseScope(bad)
		if !errors.Is(err, errNotPathScope) {
			t.Errorf("ParseScope(%q) = %v, want ErrNotPathScope", bad, err)
		}
	}
	_, err = parseScope("write:relative/**")
	if err == nil || errors.Is(err, errNotPathScope) {
		t.Errorf("malformed path glob: %v", err)
	}
}

func TestScopeGrants(t *testing.T) {
	r, _ := parseScope("read:/data/**")
	w, _ := parseScope("write:/out/**")
	if !r.Grants(opRead, "/data/x") || r.Grants(opWrite, "/data/x") {
		t.Error("read scope")
	}
	if !w.Grants(opRead, "/out/x") || !w.Grants(opWrite, "/out/x") || w.Grants(opWrite, "/data/x") {
		t.Error("write scope")
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/data/x", "/data/x", true},
		{"/data/../etc/passwd", "/etc/passwd", true},
		{"/data/./x//y/", "/data/x/y", true},
		{"/data/a/../../etc", "/etc", true},
		{"/../../data/x", "/data/x", true},
		{"file:///data/x", "/data/x", true},
		{"file:///data/%2e%2e/etc/passwd", "/etc/passwd", true},
		{"file://localhost/data/x", "/data/x", true},
		{"file://evil/data/x", "", false},
		{"https://example.com/data/x", "", false},
		{"data/x", "", false},
		{"./x", "", false},
		{"~/x", "", false},
		{"", "", false},
		{"/data/x\x00", "", false},
	}
	for _, tt := range tests {
		got, ok, reason := cleanPath(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("CleanPath(%q) = %q, %v (%s); want %q, %v", tt.in, got, ok, reason, tt.want, tt.ok)
		}
		if !ok && reason == "" {
			t.Errorf("CleanPath(%q): no reason", tt.in)
		}
	}
	// The traversal does not match its apparent prefix.
	g, _ := parseGlob("/data/**")
	p, _, _ := cleanPath("/data/../etc/passwd")
	if g.Match(p) {
		t.Error("/data/../etc/passwd matched /data/**")
	}
}

func TestPathArgs(t *testing.T) {
	args := map[string]any{
		"path":        "/a",
		"paths":       []any{"/b", 3, "/c"},
		"source":      "/s",
		"destination": "/d",
		"content":     "/not/a/path/key",
		"uri":         "https://x",
		"url":         "file:///u",
		"outputPath":  "/o",
		"log_file":    "/l",
		"count":       3,
		"target":      map[string]any{"x": 1},
	}
	got := PathArgs(args)
	var keys []string
	for _, p := range got {
		keys = append(keys, p.Key+"="+p.Value)
	}
	want := "destination=/d log_file=/l outputPath=/o path=/a paths[0]=/b paths[2]=/c source=/s url=file:///u"
	if strings.Join(keys, " ") != want {
		t.Errorf("PathArgs = %s\nwant       %s", strings.Join(keys, " "), want)
	}
}

// TestPathArgsFoldCase: a server that decodes argument names
// case-insensitively reads "Path" as "path", so the witness treats every
// letter-case form of a path key as a path (fails closed).
func TestPathArgsFoldCase(t *testing.T) {
	got := PathArgs(map[string]any{"Path": "/etc/passwd", "FILE": "/f", "PATHS": []any{"/p"}, "URL": "file:///u", "Uri": "https://x", "xpath": "//a"})
	var keys []string
	for _, p := range got {
		keys = append(keys, p.Key+"="+p.Value)
	}
	want := "FILE=/f PATHS[0]=/p Path=/etc/passwd URL=file:///u"
	if strings.Join(keys, " ") != want {
		t.Errorf("PathArgs = %s\nwant       %s", strings.Join(keys, " "), want)
	}
}

// FuzzParseScope: the scope and glob parser never panics, and a parsed glob
// matches deterministically and only absolute paths.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"read:/data/**", "write:/out/*.txt", "read:/**", "read:/a/**/b/?/c", `read:/a\*`, "net:x", "read:", "read:/data/../x", "write:/a//b"} {
		f.Add(s, "/data/x/y.txt")
	}
	f.Fuzz(func(t *testing.T, scope, p string) {
		s, err := parseScope(scope)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		clean, ok, _ := cleanPath(p)
		if !ok {
			return
		}
		a := s.Glob.Match(clean)
		b := s.Glob.Match(clean)
		if a != b {
			t.Fatal("nondeterministic match")
		}
		if a && !strings.HasPrefix(clean, "/") {
			t.Fatalf("matched a relative path %q", clean)
		}
		if utf8.ValidString(scope) && strings.Contains(clean, "/../") {
			t.Fatalf("cleaned path still has ..: %q", clean)
		}
	})
}
