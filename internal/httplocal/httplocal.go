// Package httplocal holds what the witness's two kinds of HTTP listener
// share: the recording proxy (package httpproxy, `witness proxy --listen`)
// and the replay servers (package serve/httpserve, `witness serve
// --listen`). Opening a loopback listener, the Origin check against DNS
// rebinding, the errors the witness answers with itself, hop-by-hop
// headers and the split of a JSON-RPC body into its messages are the same
// on both sides, so that a client cannot tell them apart by these.
package httplocal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/mcp"
)

// DefaultListen is the address the proxy and the replaying servers listen
// on when none is given: loopback, a free port.
const DefaultListen = "127.0.0.1:0"

// DefaultShutdownGrace is how long exchanges in flight may run on after a
// signal before their connections are closed.
const DefaultShutdownGrace = 5 * time.Second

// The MCP Streamable HTTP header and media type both sides read and write.
const (
	HeaderMcpSessionID     = "Mcp-Session-Id"
	ContentTypeEventStream = "text/event-stream"
)

// Listen opens the listener: an empty address is DefaultListen, a
// host-less ":PORT" listens on loopback. An address that cannot be
// listened on is exit code Failure with a hint naming --listen.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultListen
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("listen on %s: %w", addr, err), "choose another --listen address, or 127.0.0.1:0 for a free port")
	}
	return ln, nil
}

// CheckOrigin reports whether a request may be served by a listening
// witness (the proxy or a replaying server). The MCP transport requires
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

// WriteOriginRefusal answers 403 to a request with a foreign Origin
// (one CheckOrigin refused).
func WriteOriginRefusal(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Witness-Error", "origin_not_allowed")
	w.WriteHeader(http.StatusForbidden)
	w.Write(originRefusal(r.Header.Get("Origin")))
}

// ErrorBody is the JSON error the witness answers with itself, in the
// shape of the API the path names (Anthropic's for /v1/messages, else
// OpenAI's), so that SDKs surface its message.
func ErrorBody(path, typ, msg string) []byte {
	var v any
	if isAnthropic(path) {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": "witness_" + typ}}
	}
	b, _ := json.Marshal(v)
	return b
}

func isAnthropic(path string) bool {
	p, _, _ := strings.Cut(path, "?")
	return strings.HasSuffix(p, "/messages") || strings.Contains(p, "/messages/")
}

// WriteError answers status with ErrorBody, its type also in the
// X-Witness-Error header.
func WriteError(w http.ResponseWriter, status int, path, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Witness-Error", typ)
	w.WriteHeader(status)
	w.Write(ErrorBody(path, typ, msg))
}

// hopByHop are the headers of one connection (RFC 9110, section 7.6.1),
// which a proxy does not forward.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// EndToEnd returns a copy of h without hop-by-hop headers (those of the
// list and those the Connection header names).
func EndToEnd(h http.Header) http.Header {
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

// SplitMessages returns the JSON-RPC messages of a body: the body itself,
// or the elements of a batch (2025-03-26). It does not parse them: the
// session's deriver does, once (the proxy's anyRPC tells JSON-RPC from
// other bodies while an exchange is not yet known to be MCP).
func SplitMessages(body []byte) [][]byte {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return nil
	}
	if mcp.IsBatch(b) && json.Valid(b) && jsonlimit.Check(b) == nil {
		var msgs [][]byte
		mcp.ForElements(b, func(el json.RawMessage) { msgs = append(msgs, el) })
		return msgs
	}
	return [][]byte{b}
}
