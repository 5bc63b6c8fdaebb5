package seal

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Glob is a parsed absolute path glob. Segments are separated by "/". Within
// a segment "*" matches any run of characters other than "/", "?" matches one
// such character, and "\" escapes the next character. A segment that is
// exactly "**" matches zero or more whole segments, so "/data/**" matches
// "/data", "/data/x" and "/data/x/y" but not "/database" or "/etc".
type Glob struct {
	src  string
	segs []string // "**" or a segment pattern
}

// String returns the glob as written.
func (g Glob) String() string { return g.src }

// ParseGlob parses an absolute path glob.
func ParseGlob(s string) (Glob, error) {
	if s == "" {
		return Glob{}, errors.New("empty path glob")
	}
	if !strings.HasPrefix(s, "/") {
		return Glob{}, fmt.Errorf("path glob %q is not absolute (it must start with /)", s)
	}
	if strings.ContainsRune(s, 0) {
		return Glob{}, fmt.Errorf("path glob %q contains a NUL byte", s)
	}
	parts := strings.Split(s[1:], "/")
	segs := make([]string, 0, len(parts))
	for i, p := range parts {
		switch {
		case p == "":
			if i == len(parts)-1 && len(parts) > 1 {
				continue // trailing slash: "/data/" is "/data"
			}
			if len(parts) == 1 {
				continue // "/" alone: the root
			}
			return Glob{}, fmt.Errorf("path glob %q has an empty segment", s)
		case p == "." || p == "..":
			return Glob{}, fmt.Errorf("path glob %q has a %q segment; write the path without it", s, p)
		case p == "**":
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue // "**/**" is "**"
			}
		case strings.Contains(p, "**"):
			return Glob{}, fmt.Errorf("path glob %q: ** must be a whole segment (got %q)", s, p)
		default:
			if strings.HasSuffix(p, `\`) && !strings.HasSuffix(p, `\\`) {
				return Glob{}, fmt.Errorf("path glob %q: trailing backslash in segment %q", s, p)
			}
		}
		segs = append(segs, p)
	}
	return Glob{src: s, segs: segs}, nil
}

// Match reports whether the glob matches p, which must be an absolute, clean
// path (see CleanPath).
func (g Glob) Match(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	var parts []string
	if p != "/" {
		parts = strings.Split(p[1:], "/")
	}
	return matchSegs(g.segs, parts)
}

func matchSegs(pat, parts []string) bool {
	// Iterative with backtracking on the last "**", like path.Match's star
	// handling, so the cost stays O(len(pat)*len(parts)).
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for si < len(parts) || pi < len(pat) {
		if pi < len(pat) {
			if pat[pi] == "**" {
				starPi, starSi = pi, si
				pi++
				continue
			}
			if si < len(parts) && matchSegment(pat[pi], parts[si]) {
				pi++
				si++
				continue
			}
		}
		if starPi >= 0 && starSi < len(parts) {
			starSi++
			pi, si = starPi+1, starSi
			continue
		}
		return false
	}
	return true
}

// matchSegment matches one segment pattern against one path segment.
func matchSegment(pat, s string) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(pat) {
			switch c := pat[pi]; c {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				// one UTF-8 character
				_, n := utf8.DecodeRuneInString(s[si:])
				pi++
				si += n
				continue
			case '\\':
				if pi+1 < len(pat) && pat[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			default:
				if c == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if starP >= 0 {
			_, n := utf8.DecodeRuneInString(s[starS:])
			starS += n
			pi, si = starP+1, starS
			continue
		}
		return false
	}
	for pi < len(pat) && pat[pi] == '*' {
		pi++
	}
	return pi == len(pat)
}
