package httpproxy

import (
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"net/http"
	"sort"
)

// credentialHeaders are the headers whose values never reach the disk:
// each is replaced by a keyed hash in the cassette (lower case).
var credentialHeaders = cassette.CredentialHeaders

// hasher replaces credential header values and credential query values
// by keyed hashes.
type hasher struct {
	key    *derive.Redactor // its Token is the keyed hash; its rules are not used here
	names  map[string]bool  // lower-case header names
	params map[string]bool  // lower-case query parameter names
	keyID  string           // as written in the cassette header
	plist  []string         // params, sorted
}

func newHasher(key *derive.Redactor, keyID string, extra, extraParams []string) *hasher {
	h := &hasher{key: key, keyID: keyID}
	h.names, _ = cassette.NameSet(credentialHeaders, extra)
	h.params, h.plist = cassette.NameSet(cassette.CredentialParams, extraParams)
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

// uri returns a request target or URL as it may be written: credential
// query values replaced by keyed hashes (cassette.RedactQuery).
func (h *hasher) uri(s string) (string, bool) {
	return cassette.RedactQuery(s, h.params, h.key.Token)
}

// head returns the request head record of r, credentials hashed; r itself
// (what goes upstream) is not touched.
func (h *hasher) head(r *http.Request) cassette.HTTPRecord {
	path, red := h.uri(r.RequestURI)
	return cassette.HTTPRecord{Method: r.Method, Path: path, Host: r.Host, Proto: r.Proto, Header: h.fields(r.Header), Redacted: red}
}
