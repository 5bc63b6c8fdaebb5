package cassette

import (
	"net/http"
	"sort"
	"strings"
)

// CredentialHeaders are the headers whose values never reach the disk in
// an HTTP cassette, whoever records it (the proxy, the capture client):
// each value is replaced by a keyed hash (lower-case names, sorted).
var CredentialHeaders = []string{"api-key", "authorization", "cookie", "proxy-authorization", "set-cookie", "x-api-key"}

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
