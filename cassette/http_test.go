package cassette

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// writeHTTP writes a small HTTP cassette: two interleaved exchanges, one
// streamed with a chunk that is not UTF-8, one redacted request chunk and
// one failed exchange.
func writeHTTP(t testing.TB, frozen bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewHTTPWriter(&buf, HTTPFileHeader{Mode: "proxy", Upstream: "http://127.0.0.1:1/base", Started: "2026-08-30T14:33:00+00:00", Frozen: frozen, HeaderKey: "sha256:0011223344556677", RedactedHeaders: []string{"authorization", "x-api-key"}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	h := []Field{{"Authorization", "redacted:hmac-sha256:00"}, {"Content-Type", "application/json"}}
	x1, err := w.Request(HTTPRecord{Method: "POST", Path: "/v1/chat/completions", Host: "127.0.0.1:8080", Proto: "HTTP/1.1", Header: h})
	must(err)
	x2, err := w.Request(HTTPRecord{Method: "POST", Path: "/v1/messages?beta=true", Host: "127.0.0.1:8080", Proto: "HTTP/1.1", Header: nil})
	must(err)
	must(w.Body(x1, false, []byte(`{"model":"m","stream":true}`), false, 0))
	must(w.Body(x2, false, []byte(`{"secret":"redacted:hmac-sha256:ab"}`), true, 17))
	must(w.End(x1, false, ""))
	must(w.Response(x1, 200, "HTTP/1.1", []Field{{"Content-Type", "text/event-stream"}}))
	must(w.Body(x1, true, []byte("data: {\"a\":1}\n\n"), false, 0))
	must(w.End(x2, false, ""))
	must(w.Body(x1, true, []byte{0xff, 0xfe, '\n'}, false, 0))
	must(w.Fail(x2, "upstream: connection refused", 502))
	must(w.End(x1, true, ""))
	return buf.Bytes()
}

func TestHTTPCassetteRoundTrip(t *testing.T) {
	data := writeHTTP(t, true)
	h, xs, err := ReadHTTPExchanges(bytes.NewReader(data), "c.jsonl", -1)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if h.Format != HTTPFormat || h.Upstream != "http://127.0.0.1:1/base" || !h.Frozen {
		t.Fatalf("header %+v", h)
	}
	if len(xs) != 2 {
		t.Fatalf("%d exchanges, want 2", len(xs))
	}
	x1, x2 := xs[0], xs[1]
	if got := string(x1.Request.Body()); got != `{"model":"m","stream":true}` {
		t.Errorf("request body %q", got)
	}
	if x1.Response == nil || x1.Response.Status != 200 || len(x1.Response.Chunks) != 2 {
		t.Fatalf("response %+v", x1.Response)
	}
	if !bytes.Equal(x1.Response.Chunks[1].Data, []byte{0xff, 0xfe, '\n'}) || x1.Response.Chunks[1].Off != 15 {
		t.Errorf("second chunk %+v", x1.Response.Chunks[1])
	}
	if x1.Request.HeaderValue("content-type") != "application/json" {
		t.Errorf("headers %+v", x1.Request.Header)
	}
	if x2.Error != "upstream: connection refused" || x2.Status != 502 || x2.Response != nil {
		t.Errorf("failed exchange %+v", x2)
	}
	if !x2.Request.Redacted() || x2.Request.Bytes != 17 {
		t.Errorf("redacted request %+v", x2.Request)
	}
	// frozen: no times, so the same session gives the same bytes
	if bytes.Contains(data, []byte(`"t":`)) {
		t.Errorf("frozen cassette carries times:\n%s", data)
	}
	if !bytes.Equal(data, writeHTTP(t, true)) {
		t.Error("two frozen writes differ")
	}
	// unfrozen: every record has a time
	live := writeHTTP(t, false)
	if n := bytes.Count(live, []byte(`"t":`)); n != 11 {
		t.Errorf("%d records with a time, want 11", n)
	}
	if _, _, err := ReadHTTPExchanges(bytes.NewReader(live), "live.jsonl", -1); err != nil {
		t.Error(err)
	}
	// limits: a body beyond the limit is marked truncated
	_, xs, err = ReadHTTPExchanges(bytes.NewReader(data), "c.jsonl", 16)
	if err != nil || !xs[0].Request.Truncated || xs[0].Request.Bytes != 27 || len(xs[0].Request.Chunks) != 0 {
		t.Errorf("limit 16: %v %+v", err, xs[0].Request)
	}
}

func TestHTTPCassetteKind(t *testing.T) {
	data := writeHTTP(t, true)
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if k, err := Kind(first, "c"); err != nil || k != HTTPFormat {
		t.Errorf("http: %q %v", k, err)
	}
	if k, err := Kind([]byte(`{"format":"witness-cassette","v":1}`), "c"); err != nil || k != format {
		t.Errorf("stdio: %q %v", k, err)
	}
	if _, err := Kind([]byte(`{"format":"other"}`), "c"); err == nil || !strings.Contains(err.Error(), "c:1: $.format: not a witness cassette") {
		t.Errorf("other: %v", err)
	}
	// the stdio reader refuses an HTTP cassette (serve asks Kind first)
	if _, err := NewReader(bytes.NewReader(data), "c"); err == nil || !strings.Contains(err.Error(), "c:1: ") {
		t.Errorf("stdio reader: %v", err)
	}
}

// TestHTTPCassetteRefuses edits one line of a good cassette and expects an
// error naming file, line and field.
func TestHTTPCassetteRefuses(t *testing.T) {
	good := string(writeHTTP(t, true))
	cases := []struct{ name, old, new, want string }{
		{"seq", `{"seq":3,`, `{"seq":4,`, `c.jsonl:5: $.seq: expected 3, got 4`},
		{"offset", `"off":0,"text":"data:`, `"off":1,"text":"data:`, `c.jsonl:8: $.off: expected 0, got 1`},
		{"edited body", `:true}"}`, `:TRUE}"}`, `c.jsonl:6: $.sha256: `},
		{"length", `"bytes":27`, `"bytes":28`, `c.jsonl:6: $.bytes: 28, but the chunks hold 27 bytes`},
		{"unknown field", `"rec":"request_end"`, `"rec":"request_end","extra":1`, `c.jsonl:6: not an HTTP cassette record: json: unknown field "extra"`},
		{"field of another kind", `"rec":"request_end"`, `"rec":"request_end","status":200`, `c.jsonl:6: $.status: a request_end record does not carry it`},
		{"missing field", `"method":"POST","path":"/v1/chat/completions",`, `"path":"/v1/chat/completions",`, `c.jsonl:2: $.method: missing`},
		{"unknown kind", `"rec":"error"`, `"rec":"oops"`, `c.jsonl:11: $.rec: unknown record kind "oops"`},
		{"exchange skipped", `{"seq":1,"x":2,`, `{"seq":1,"x":3,`, `c.jsonl:3: $.x: a new exchange is 2, got 3`},
		{"frozen time", `{"seq":4,"x":1,"rec":"request_end",`, `{"seq":4,"x":1,"rec":"request_end","t":5,`, `c.jsonl:6: $.t: a frozen cassette carries no times`},
		{"bad status", `"status":200`, `"status":99`, `c.jsonl:7: $.status: 99 is not an HTTP status`},
		{"redacted without n", `"redacted":true,"n":17`, `"redacted":true`, `c.jsonl:5: $.n: present exactly when the chunk is redacted`},
		{"base64", `"b64":"//4K"`, `"b64":"!!"`, `c.jsonl:10: $.b64: invalid base64`},
		{"header format", `"format":"witness-http-cassette"`, `"format":"nope"`, `c.jsonl:1: $.format: not an HTTP cassette`},
		{"header pair", `["Content-Type","application/json"]`, `["Content-Type"]`, `c.jsonl:2: not an HTTP cassette record: a header is [name, value], got 1 strings`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.old) {
				t.Fatalf("%q not in the cassette:\n%s", c.old, good)
			}
			bad := strings.Replace(good, c.old, c.new, 1)
			_, _, err := ReadHTTPExchanges(strings.NewReader(bad), "c.jsonl", -1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%T is not a ParseError", err)
			}
		})
	}
	// a record after the exchange is over
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	extra := `{"seq":11,"x":1,"rec":"response_end","bytes":18,"sha256":"x"}`
	_, _, err := ReadHTTPExchanges(strings.NewReader(strings.Join(append(lines, extra), "\n")+"\n"), "c.jsonl", -1)
	if err == nil || !strings.Contains(err.Error(), "c.jsonl:13: $.x: exchange 1 is already over") {
		t.Errorf("after the end: %v", err)
	}
	// a cut-off cassette leaves its exchanges open, which the reader says
	r, err := NewHTTPReader(strings.NewReader(strings.Join(lines[:8], "\n")+"\n"), "c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Open(); len(got) != 2 {
		t.Errorf("open exchanges %v, want [1 2]", got)
	}
}

// FuzzHTTPReader: the HTTP cassette reader never panics, and what it
// accepts it reads the same way twice.
func FuzzHTTPReader(f *testing.F) {
	f.Add(writeHTTP(f, true))
	f.Add(writeHTTP(f, false))
	f.Add([]byte(`{"format":"witness-http-cassette","v":1,"mode":"proxy","upstream":"u","started":"s","header_key":"k","redacted_headers":[]}` + "\n" + `{"seq":0,"x":1,"rec":"request","method":"GET","path":"/","host":"h","proto":"HTTP/1.1","headers":[]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, xs, err := ReadHTTPExchanges(bytes.NewReader(data), "fuzz", 1<<20)
		if err != nil {
			return
		}
		_, again, err := ReadHTTPExchanges(bytes.NewReader(data), "fuzz", 1<<20)
		if err != nil || len(again) != len(xs) {
			t.Fatalf("second read differs: %v", err)
		}
		for i := range xs {
			if !bytes.Equal(xs[i].Request.Body(), again[i].Request.Body()) {
				t.Fatal("bodies differ")
			}
		}
	})
}
