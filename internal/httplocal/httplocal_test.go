package httplocal

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// CheckOrigin lets in no Origin, loopback origins and listed ones, and
// nothing else.
func TestCheckOrigin(t *testing.T) {
	allow := []string{"https://app.example/", "HTTP://Other.Example:8080"}
	for _, tc := range []struct {
		origin []string
		want   bool
	}{
		{nil, true},
		{[]string{"http://localhost:6274"}, true},
		{[]string{"http://inspector.localhost"}, true},
		{[]string{"http://127.0.0.1:9"}, true},
		{[]string{"http://[::1]:9"}, true},
		{[]string{"https://app.example"}, true},
		{[]string{"http://other.example:8080"}, true},
		{[]string{"http://evil.example"}, false},
		{[]string{"null"}, false},
		{[]string{"http://localhost.evil.example"}, false},
		{[]string{"file://localhost"}, false},
		{[]string{"http://localhost", "http://localhost"}, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for _, o := range tc.origin {
			r.Header.Add("Origin", o)
		}
		if got := CheckOrigin(r, allow); got != tc.want {
			t.Errorf("Origin %q: %v, want %v", tc.origin, got, tc.want)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Origin", "http://evil.example")
	if !CheckOrigin(r, []string{"*"}) {
		t.Error(`"*" does not allow every origin`)
	}
	w := httptest.NewRecorder()
	WriteOriginRefusal(w, r)
	if w.Code != http.StatusForbidden || w.Header().Get("X-Witness-Error") != "origin_not_allowed" ||
		!strings.Contains(w.Body.String(), `"id":null`) || !strings.Contains(w.Body.String(), "Origin http://evil.example is not allowed") {
		t.Errorf("refusal: %d %v %s", w.Code, w.Header(), w.Body.String())
	}
}

// ErrorBody speaks the shape of the API the path names.
func TestErrorBody(t *testing.T) {
	if got := string(ErrorBody("/v1/messages?beta=true", "upstream_error", "m")); got != `{"error":{"message":"m","type":"upstream_error"},"type":"error"}` {
		t.Errorf("anthropic: %s", got)
	}
	if got := string(ErrorBody("/v1/chat/completions", "upstream_error", "m")); got != `{"error":{"code":"witness_upstream_error","message":"m","param":null,"type":"upstream_error"}}` {
		t.Errorf("openai: %s", got)
	}
	w := httptest.NewRecorder()
	WriteError(w, http.StatusBadGateway, "/v1/responses", "recording_failed", "m")
	if w.Code != http.StatusBadGateway || w.Header().Get("X-Witness-Error") != "recording_failed" || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%d %v", w.Code, w.Header())
	}
}

// EndToEnd drops the listed hop-by-hop headers and those Connection names.
func TestEndToEnd(t *testing.T) {
	h := http.Header{"Connection": {"X-Hop, keep-alive"}, "X-Hop": {"1"}, "Keep-Alive": {"timeout=5"},
		"Transfer-Encoding": {"chunked"}, "Content-Type": {"application/json"}}
	out := EndToEnd(h)
	if len(out) != 1 || out.Get("Content-Type") != "application/json" {
		t.Errorf("%v", out)
	}
	if h.Get("X-Hop") != "1" {
		t.Error("the input was changed")
	}
	if EndToEnd(nil) == nil {
		t.Error("nil header: want an empty one")
	}
}

// SplitMessages splits a batch and nothing else.
func TestSplitMessages(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"", nil},
		{"  \n", nil},
		{` {"jsonrpc":"2.0","id":1,"method":"ping"} `, []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}},
		{`[{"id":1},{"id":2}]`, []string{`{"id":1}`, `{"id":2}`}},
		{`[{"id":1},`, []string{`[{"id":1},`}},
		{`not json`, []string{`not json`}},
	} {
		var got []string
		for _, m := range SplitMessages([]byte(tc.body)) {
			got = append(got, string(m))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("%q: %q, want %q", tc.body, got, tc.want)
		}
	}
}

// Listen puts a host-less address on loopback.
func TestListen(t *testing.T) {
	ln, err := Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if a := ln.Addr().String(); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("listening on %s", a)
	}
	if _, err := Listen("256.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "listen on 256.0.0.1:0") {
		t.Errorf("bad address: %v", err)
	}
}
