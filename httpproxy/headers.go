package httpproxy

import (
	"net/http"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/cassette"
)

// CredentialHeaders are the headers whose values never reach the disk:
// each is replaced by a keyed hash in the cassette (lower case).
var CredentialHeaders = cassette.CredentialHeaders

// hopByHop are the headers of one connection (RFC 9110, section 7.6.1),
// which a proxy does not forward.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// endToEnd returns a copy of h without hop-by-hop headers (those of the
// list and those the Connection header names).
func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		out.Del(name)
	}
	return out
}

// hasher replaces credential header values by keyed hashes.
type hasher struct {
	key   *capture.Redactor // its Token is the keyed hash; its rules are not used here
	names map[string]bool   // lower-case names
	keyID string            // as written in the cassette header
}

func newHasher(key *capture.Redactor, keyID string, extra []string) *hasher {
	h := &hasher{key: key, names: map[string]bool{}, keyID: keyID}
	for _, n := range CredentialHeaders {
		h.names[n] = true
	}
	for _, n := range extra {
		h.names[strings.ToLower(strings.TrimSpace(n))] = true
	}
	return h
}

// list returns the hashed header names, sorted.
func (h *hasher) list() []string {
	out := make([]string, 0, len(h.names))
	for n := range h.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// fields returns the header as cassette fields, sorted by name, values in
// their order, credential values replaced by keyed hashes.
func (h *hasher) fields(hd http.Header) []cassette.Field {
	return cassette.HeaderFields(hd, h.names, h.key.Token)
}
