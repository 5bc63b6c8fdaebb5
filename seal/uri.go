package seal

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ResourcePattern is one entry of a seal's "resources": the MCP resource
// URIs the agent may read (docs/formats/seal.md, "Resource URI patterns").
// A pattern is a URI whose path may hold the scope glob dialect ("*" within
// a segment, "**" as a whole segment for zero or more segments) and whose
// query and fragment may hold "*" (any run of characters). "**" alone
// matches every URI. Scheme and host compare case-insensitively, after
// percent-encoding normalization and dot-segment removal on both sides.
type ResourcePattern struct {
	raw string
	any bool // "**": every URI
	u   uriParts
	// path is the glob of u.path ("/"-prefixed for opaque URIs); tail the
	// query and fragment pattern with "?" escaped, for matchSegment.
	path Glob
	tail string
}

// uriParts is a URI split and normalized for matching.
type uriParts struct {
	scheme  string // lower case
	hasAuth bool   // "//" authority present (always for file: URIs)
	auth    string // lower case, percent-normalized, default port removed
	opaque  bool   // a path that does not start with "/" (urn:x, mailto:y)
	path    string // normalized path; "/" when empty under an authority
	tail    string // "?query#fragment" as written after normalization, "" when none
}

// String returns the pattern as written in the seal.
func (p ResourcePattern) String() string { return p.raw }

// ParseResourcePattern parses a resource URI pattern.
func ParseResourcePattern(s string) (ResourcePattern, error) {
	if s == "**" {
		return ResourcePattern{raw: s, any: true}, nil
	}
	u, err := splitURI(s, true)
	if err != nil {
		return ResourcePattern{}, fmt.Errorf("resource pattern %q: %w", s, err)
	}
	if strings.Contains(u.scheme+u.auth, "*") {
		return ResourcePattern{}, fmt.Errorf("resource pattern %q: wildcards are allowed only in the path, query and fragment", s)
	}
	g, err := ParseGlob(globPath(u))
	if err != nil {
		return ResourcePattern{}, fmt.Errorf("resource pattern %q: %w", s, err)
	}
	return ResourcePattern{raw: s, u: u, path: g, tail: strings.ReplaceAll(u.tail, "?", `\?`)}, nil
}

// Match reports whether uri is inside the pattern. A URI that cannot be
// placed (no scheme, user info, an encoded "/", "\" or NUL, a backslash,
// control characters or spaces, malformed percent-encoding, an empty or
// dot segment that cannot be resolved) matches no pattern, not even "**":
// reason says why. The caller fails closed on it.
func (p ResourcePattern) Match(uri string) (ok bool, reason string) {
	u, err := NormalizeURI(uri)
	if err != nil {
		return false, err.Error()
	}
	return p.matchParts(u.p), ""
}

// MatchNormalized is Match on a URI NormalizeURI returned, so a caller
// that tries many patterns normalizes once.
func (p ResourcePattern) MatchNormalized(u NormalizedURI) bool { return p.matchParts(u.p) }

func (p ResourcePattern) matchParts(u uriParts) bool {
	if p.any {
		return true
	}
	if u.scheme != p.u.scheme || u.hasAuth != p.u.hasAuth || u.auth != p.u.auth || u.opaque != p.u.opaque {
		return false
	}
	if !p.path.Match(globPath(u)) {
		return false
	}
	if p.tail == "" || u.tail == "" {
		return p.tail == u.tail
	}
	return matchSegment(p.tail, u.tail)
}

// NormalizedURI is a URI in the form resource patterns match against.
type NormalizedURI struct{ p uriParts }

// String returns the normalized URI: lower-case scheme and host, unreserved
// and non-ASCII percent-escapes decoded (others in upper-case hex), dot
// segments removed, file: URIs with an empty authority.
func (n NormalizedURI) String() string {
	u := n.p
	var b strings.Builder
	b.WriteString(u.scheme)
	b.WriteByte(':')
	if u.hasAuth {
		b.WriteString("//")
		b.WriteString(u.auth)
	}
	b.WriteString(u.path)
	b.WriteString(u.tail)
	return b.String()
}

// NormalizeURI normalizes a resource URI for matching, or says why it
// cannot be placed (see ResourcePattern.Match).
func NormalizeURI(uri string) (NormalizedURI, error) {
	u, err := splitURI(uri, false)
	if err != nil {
		return NormalizedURI{}, fmt.Errorf("URI %q cannot be placed: %w", uri, err)
	}
	return NormalizedURI{p: u}, nil
}

// globPath is the path a glob matches: the normalized path, "/"-prefixed
// for an opaque one.
func globPath(u uriParts) string {
	if u.opaque {
		return "/" + u.path
	}
	return u.path
}

// splitURI splits and normalizes a URI (or a pattern, which may hold "*").
func splitURI(s string, pattern bool) (uriParts, error) {
	var u uriParts
	if s == "" {
		return u, errors.New("empty")
	}
	if !utf8.ValidString(s) {
		return u, errors.New("invalid UTF-8")
	}
	for _, r := range s {
		switch {
		case r <= 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return u, fmt.Errorf("control character or space %q (a URL parser strips or rewrites them)", r)
		case r == '\\':
			return u, errors.New(`backslash (URL parsers read it as "/" in file: and http: URLs)`)
		}
	}
	i := strings.IndexByte(s, ':')
	if i <= 0 || !validScheme(s[:i]) {
		return u, errors.New("no URI scheme")
	}
	u.scheme = strings.ToLower(s[:i])
	rest := s[i+1:]
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		tail, err := normPercent(rest[j:])
		if err != nil {
			return u, err
		}
		u.tail, rest = tail, rest[:j]
	}
	path := rest
	if strings.HasPrefix(rest, "//") {
		u.hasAuth = true
		auth := rest[2:]
		path = ""
		if j := strings.IndexByte(auth, '/'); j >= 0 {
			auth, path = auth[:j], auth[j:]
		}
		if strings.Contains(auth, "@") {
			return u, errors.New("user info in the authority (the host is what follows the @)")
		}
		a, err := normPercent(auth)
		if err != nil {
			return u, err
		}
		u.auth = defaultPort(u.scheme, lowerKeepEscapes(a))
	}
	if u.scheme == "file" {
		// file:/p and file://localhost/p are file:///p (RFC 8089)
		if !u.hasAuth && strings.HasPrefix(path, "/") {
			u.hasAuth = true
		}
		if u.auth == "localhost" {
			u.auth = ""
		}
	}
	p, err := normPercent(path)
	if err != nil {
		return u, err
	}
	switch {
	case u.hasAuth && p == "":
		p = "/"
	case !u.hasAuth && !strings.HasPrefix(p, "/"):
		u.opaque = true
	}
	if q := strings.TrimSuffix(p, "/"); strings.Contains(q, "//") || strings.HasSuffix(q, "/") {
		// before dot removal: RFC 3986 and a file system resolve
		// "/data//../x" differently
		return u, errors.New("an empty path segment")
	}
	if u.opaque {
		if p == "" {
			return u, errors.New("empty path")
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." {
				return u, fmt.Errorf("a %q segment in an opaque path", seg)
			}
		}
	} else {
		if pattern {
			for _, seg := range strings.Split(p, "/") {
				if seg == "." || seg == ".." {
					return u, fmt.Errorf("a %q segment; write the path without it", seg)
				}
			}
		}
		p = removeDotSegments(p)
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	if pattern && strings.Contains(p, "?") {
		return u, errors.New("? in the path")
	}
	u.path = p
	return u, nil
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// defaultPort drops the scheme's default port from a normalized authority.
func defaultPort(scheme, auth string) string {
	port := map[string]string{"http": ":80", "https": ":443", "ws": ":80", "wss": ":443"}[scheme]
	if port != "" && strings.HasSuffix(auth, port) {
		return strings.TrimSuffix(auth, port)
	}
	return strings.TrimSuffix(auth, ":")
}

// normPercent decodes percent-escapes of unreserved characters and of
// non-ASCII bytes (which must then form UTF-8), writes the others in
// upper-case hex, and refuses malformed escapes and encoded "/", "\" and
// NUL: a server that decodes them would read another path than the one
// matched.
func normPercent(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", errors.New("malformed percent-encoding")
		}
		v := unhex(s[i+1])<<4 | unhex(s[i+2])
		i += 2
		switch {
		case v == '/' || v == '\\' || v == 0:
			return "", fmt.Errorf("an encoded %q (%%%02X)", string(rune(v)), v)
		case v >= 0x80 || v >= 'a' && v <= 'z' || v >= 'A' && v <= 'Z' || v >= '0' && v <= '9' ||
			v == '-' || v == '.' || v == '_' || v == '~':
			b.WriteByte(v)
		default:
			fmt.Fprintf(&b, "%%%02X", v)
		}
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return "", errors.New("percent-encoded bytes that are not UTF-8")
	}
	return keepC1Encoded(out), nil
}

// keepC1Encoded writes the C1 control characters (U+0080 to U+009F) that
// decoding produced back as escapes: written raw they cannot be placed
// (see splitURI), so decoding them would make a normalized URI that does
// not normalize again.
func keepC1Encoded(s string) string {
	if strings.IndexByte(s, 0xc2) < 0 { // every C1 character starts with the byte 0xC2
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 0x80 && r < 0xa0 {
			fmt.Fprintf(&b, "%%C2%%%02X", byte(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lowerKeepEscapes lower-cases the ASCII letters of s (a host), keeping
// the upper-case hex of its percent-escapes.
func lowerKeepEscapes(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%':
			i += 2
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// removeDotSegments is RFC 3986 §5.2.4 on an absolute path: "." and ".."
// segments go, ".." never climbs above the root.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}
