package httpproxy

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CheckOrigin reports whether a request may be served by a listening
// witness (the proxy or the replaying server). The MCP transport requires
// servers to validate Origin against DNS rebinding: a page on a foreign
// site that resolves its name to 127.0.0.1 makes the browser send its own
// Origin. A request without Origin (SDKs, curl) passes, and so does a
// loopback origin (localhost, *.localhost, 127.0.0.0/8, ::1: a page served
// from this machine, such as the MCP Inspector's) and one listed in allow
// (scheme://host[:port], compared without case; "*" allows every origin).
// "null" and anything else are refused.
func CheckOrigin(r *http.Request, allow []string) bool {
	origin := r.Header.Values("Origin")
	if len(origin) == 0 {
		return true
	}
	if len(origin) > 1 {
		return false
	}
	o := strings.TrimSpace(origin[0])
	for _, a := range allow {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originRefusal is the body of a 403 for a foreign Origin: a JSON-RPC
// error (id null), which MCP clients show, and which reads as JSON to
// anyone else.
func originRefusal(origin string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": -32000, "message": "witness: Origin " + origin + " is not allowed (allow it with --allow-origin)"}})
	return b
}

// writeOriginRefusal answers 403 to a request with a foreign Origin.
func writeOriginRefusal(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Witness-Error", "origin_not_allowed")
	w.WriteHeader(http.StatusForbidden)
	w.Write(originRefusal(r.Header.Get("Origin")))
}

// refuseOrigin records a request refused for its Origin (not forwarded)
// and answers it 403.
func (p *recorder) refuseOrigin(w http.ResponseWriter, r *http.Request) {
	head := p.hash.head(r)
	x, err := p.cas.Request(head)
	if err == nil {
		err = p.cas.End(x, false, "not read: the request was refused for its Origin")
	}
	if err == nil {
		err = p.cas.Fail(x, "refused: Origin "+r.Header.Get("Origin")+" is not allowed; not forwarded", http.StatusForbidden)
	}
	if err != nil {
		p.fail(err)
	}
	writeOriginRefusal(w, r)
}
