package cassette

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// CredentialHeaders are the headers whose values never reach the disk in
// an HTTP cassette, whoever records it (the proxy, the capture client):
// each value is replaced by a keyed hash (lower-case names, sorted).
var CredentialHeaders = []string{"api-key", "authorization", "cookie", "proxy-authorization", "set-cookie", "x-amz-security-token", "x-api-key", "x-goog-api-key"}

// CredentialParams are the query parameters whose values never reach the
// disk (lower-case names, sorted): a request target or URL is recorded
// with each of their values replaced by a keyed hash, as a credential
// header's (docs/design/redaction.md). A name matches whatever its letter
// case or percent-encoding on the wire.
var CredentialParams = []string{
	"access_token", "api-key", "api_key", "apikey", "auth", "client_secret", "code",
	"id_token", "key", "password", "refresh_token", "secret", "sig", "signature", "token",
	"x-amz-credential", "x-amz-security-token", "x-amz-signature", "x-goog-api-key",
}

// tokenPrefix begins every keyed hash (eventlog.RedactTokenPrefix, then
// 64 lower-case hex digits): a value that already is one is not hashed
// again.
const tokenPrefix = "redacted:hmac-sha256:"

// isToken reports whether v is a keyed hash, exactly.
func isToken(v string) bool {
	h, ok := strings.CutPrefix(v, tokenPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// NameSet returns the lower-case, trimmed names of base and extra as a
// set, and as a sorted list of its members.
func NameSet(base, extra []string) (map[string]bool, []string) {
	set := map[string]bool{}
	for _, n := range append(append([]string{}, base...), extra...) {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			set[n] = true
		}
	}
	list := make([]string, 0, len(set))
	for n := range set {
		list = append(list, n)
	}
	sort.Strings(list)
	return set, list
}

// RedactQuery returns uri (a request target, "/v1/x?key=...", or a whole
// URL) with the value of every query parameter whose decoded, lower-case
// name secret holds replaced by hash(decoded value), and whether any value
// was replaced. Every other byte stays as it was: the path, the other
// parameters, their order and escaping, a fragment. An empty value, a
// name without "=", and a value that already is a keyed hash are left
// alone, so that redacting twice gives the same text.
func RedactQuery(uri string, secret map[string]bool, hash func([]byte) string) (string, bool) {
	return replaceQuery(uri, secret, false, func(v string) string { return hash([]byte(v)) })
}

// masked is what MaskQuery puts in place of a credential query value.
const masked = "redacted"

// MaskQuery returns uri with every non-empty value of a query parameter
// secret names, keyed hash or not, replaced by Masked: two request targets
// that differ only in their credentials mask to the same text (replay
// matches a live request on it against a recorded, hashed one).
func MaskQuery(uri string, secret map[string]bool) string {
	out, _ := replaceQuery(uri, secret, true, func(string) string { return masked })
	return out
}

func replaceQuery(uri string, secret map[string]bool, all bool, with func(string) string) (string, bool) {
	q := strings.IndexByte(uri, '?')
	if q < 0 || len(secret) == 0 {
		return uri, false
	}
	query, frag := uri[q+1:], ""
	if f := strings.IndexByte(query, '#'); f >= 0 {
		query, frag = query[:f], query[f:]
	}
	parts := strings.Split(query, "&")
	changed := false
	for i, p := range parts {
		eq := strings.IndexByte(p, '=')
		if eq <= 0 || eq == len(p)-1 {
			continue
		}
		if !secret[strings.ToLower(unescape(p[:eq]))] {
			continue
		}
		v := unescape(p[eq+1:])
		if !all && isToken(v) {
			continue
		}
		parts[i] = p[:eq+1] + with(v)
		changed = true
	}
	if !changed {
		return uri, false
	}
	return uri[:q+1] + strings.Join(parts, "&") + frag, true
}

// unescape decodes a query component ("+" is a space); a component that
// does not decode is taken as it is.
func unescape(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// HeaderFields returns hd as cassette fields, sorted by name, the values
// of a repeated header in their order, and the value of every header whose
// lower-case name secret holds replaced by hash(value).
func HeaderFields(hd http.Header, secret map[string]bool, hash func([]byte) string) []Field {
	names := make([]string, 0, len(hd))
	for n := range hd {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Field, 0, len(names))
	for _, n := range names {
		s := secret[strings.ToLower(n)]
		for _, v := range hd[n] {
			if s {
				v = hash([]byte(v))
			}
			out = append(out, Field{Name: n, Value: v})
		}
	}
	return out
}
