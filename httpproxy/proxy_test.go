package httpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestJSONExchange: a non-streamed call goes through unchanged (path
// joined to the upstream's prefix, query kept), is recorded exactly, and
// the event log ends signed.
func TestJSONExchange(t *testing.T) {
	var gotPath, gotQuery, gotBody, gotUA string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotPath, gotQuery, gotBody, gotUA = r.URL.Path, r.URL.RawQuery, string(b), r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_1")
		w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	defer up.Close()
	s := startProxy(t, up.URL+"/base/", Options{})
	req := `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}]}`
	resp, body := post(t, s.URL+"/v1/chat/completions?x=1", req, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 200 || body != `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}` {
		t.Fatalf("answer %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Request-Id") != "req_1" {
		t.Errorf("response headers %v", resp.Header)
	}
	if gotPath != "/base/v1/chat/completions" || gotQuery != "x=1" || gotBody != req {
		t.Errorf("upstream saw %q ? %q body %q", gotPath, gotQuery, gotBody)
	}
	if gotUA != "Go-http-client/1.1" {
		t.Errorf("upstream saw User-Agent %q, the client's own", gotUA)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Exchanges != 1 || res.Failure != "" {
		t.Errorf("result %+v", res)
	}
	h, xs, _ := s.cassette()
	if h.Upstream != up.URL+"/base/" || !h.Frozen || !strings.HasPrefix(h.HeaderKey, "session:sha256:") {
		t.Errorf("header %+v", h)
	}
	x := xs[0]
	if x.Request.Method != "POST" || x.Request.Path != "/v1/chat/completions?x=1" || string(x.Request.Body()) != req || !x.Request.Ended {
		t.Errorf("request %+v", x.Request)
	}
	if x.Response.Status != 200 || string(x.Response.Body()) != body || x.Response.HeaderValue("X-Request-Id") != "req_1" {
		t.Errorf("response %+v", x.Response)
	}
	rep, data := s.verifyEvents()
	if ok, why := verified(rep); !ok || !rep.Ended {
		t.Errorf("events: %s\n%s", why, data)
	}
	if !bytes.Contains(data, []byte(`"reason":"completed; 1 exchange(s); stopped by signal terminated"`)) {
		t.Errorf("end reason:\n%s", data)
	}
	if rep.Signatures[0].Status != "valid" {
		t.Errorf("signature %+v", rep.Signatures)
	}
}

// TestSSEChunksArriveBeforeTheEnd: the upstream sends one SSE event, then
// waits until the client has read it before it sends the next one. A
// proxy that buffered to the end would deadlock here (the test's timeout
// ends it); each chunk is recorded with its own record.
func TestSSEChunksArriveBeforeTheEnd(t *testing.T) {
	events := []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
		"data: [DONE]\n\n",
	}
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i, e := range events {
			if i > 0 {
				<-next // the client has read the event before
			}
			io.WriteString(w, e)
			rc.Flush()
		}
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got []string
	for i := range events {
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("event %d: %v after %q", i, err, ev.String())
			}
			ev.WriteString(line)
			if line == "\n" {
				break
			}
		}
		got = append(got, ev.String())
		if i < len(events)-1 {
			next <- struct{}{}
		}
	}
	if strings.Join(got, "") != strings.Join(events, "") {
		t.Errorf("events %q", got)
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, xs, _ := s.cassette()
	r := xs[0].Response
	if len(r.Chunks) != 3 || !r.Ended || r.EndDetail != "" {
		t.Fatalf("%d chunks, ended %v %q", len(r.Chunks), r.Ended, r.EndDetail)
	}
	for i, c := range r.Chunks {
		if string(c.Data) != events[i] {
			t.Errorf("chunk %d %q", i, c.Data)
		}
	}
}

// TestConcurrentExchanges: many requests at once each get their own
// answer, and the cassette pairs each request with its answer.
func TestConcurrentExchanges(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%s}`, b)
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	const n = 32
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf(`{"n":%d}`, i)
			resp, err := http.Post(s.URL+"/v1/x", "application/json", strings.NewReader(body))
			if err != nil {
				bad.Add(1)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != `{"echo":`+body+`}` {
				bad.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d requests got a wrong answer", bad.Load())
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, xs, _ := s.cassette()
	if len(xs) != n {
		t.Fatalf("%d exchanges, want %d", len(xs), n)
	}
	seen := map[string]bool{}
	for _, x := range xs {
		req := string(x.Request.Body())
		if string(x.Response.Body()) != `{"echo":`+req+`}` {
			t.Errorf("exchange %d: request %q answered %q", x.X, req, x.Response.Body())
		}
		seen[req] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct requests recorded", len(seen))
	}
}

// TestNoRedirectFollowed: a redirect from the upstream goes to the client
// as it is; the upstream sees one request.
func TestNoRedirectFollowed(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, _ := post(t, s.URL+"/v1/x", `{}`, nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" {
		t.Errorf("client got %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if hits.Load() != 1 {
		t.Errorf("upstream got %d requests, want 1", hits.Load())
	}
}

// TestHopByHopHeaders: hop-by-hop headers (and those Connection names)
// are not forwarded either way; end-to-end headers are.
func TestHopByHopHeaders(t *testing.T) {
	var seen http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.Header().Set("Connection", "X-Hop-Back")
		w.Header().Set("X-Hop-Back", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-End-Back", "1")
		w.Write([]byte("ok"))
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, _ := post(t, s.URL+"/v1/x", `{}`, map[string]string{"Connection": "X-Hop", "X-Hop": "1", "Keep-Alive": "300", "Proxy-Authorization": "Basic abc", "X-End": "1", "Te": "trailers"})
	for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Te"} {
		if seen.Get(h) != "" {
			t.Errorf("upstream got hop-by-hop %s: %q", h, seen.Get(h))
		}
	}
	if seen.Get("X-End") != "1" {
		t.Errorf("upstream lost X-End: %v", seen)
	}
	if resp.Header.Get("X-Hop-Back") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("client got hop-by-hop headers: %v", resp.Header)
	}
	if resp.Header.Get("X-End-Back") != "1" {
		t.Errorf("client lost X-End-Back: %v", resp.Header)
	}
}

// TestCredentialsHashed: credential headers (and --redact-header ones)
// never reach the disk; with the same key, the same value gives the same
// hash in two sessions, and another key another hash.
func TestCredentialsHashed(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-secret-1" || r.Header.Get("X-Custom-Token") != "tok-secret-3" {
			t.Errorf("upstream got changed credentials: %v", r.Header)
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "cookie-secret-4"})
		w.Header().Set("Date", "Sun, 30 Aug 2026 14:33:00 GMT") // the same bytes in every session
		w.Write([]byte("{}"))
	}))
	defer up.Close()
	creds := map[string]string{"Authorization": "Bearer sk-secret-1", "X-Api-Key": "ant-secret-2", "Api-Key": "azure-secret-5", "Cookie": "c=cookie-secret-6", "X-Custom-Token": "tok-secret-3"}
	secrets := []string{"sk-secret-1", "ant-secret-2", "tok-secret-3", "cookie-secret-4", "azure-secret-5", "cookie-secret-6"}
	key1 := bytes.Repeat([]byte{1}, 32)
	record := func(key []byte) (*cassette.HTTPExchange, []byte) {
		s := startProxy(t, up.URL, Options{HeaderKey: key, RedactHeaders: []string{"X-Custom-Token"}})
		resp, _ := post(t, s.URL+"/v1/x", `{}`, creds)
		if len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != "cookie-secret-4" {
			t.Errorf("client got cookies %v", resp.Cookies())
		}
		if _, err := s.stop(); err != nil {
			t.Fatal(err)
		}
		_, xs, data := s.cassette()
		for _, sec := range secrets {
			if bytes.Contains(data, []byte(sec)) {
				t.Errorf("%s reached the cassette", sec)
			}
		}
		return xs[0], data
	}
	a, dataA := record(key1)
	b, dataB := record(key1)
	c, _ := record(bytes.Repeat([]byte{2}, 32))
	for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie", "X-Custom-Token"} {
		va, vb, vc := a.Request.HeaderValue(h), b.Request.HeaderValue(h), c.Request.HeaderValue(h)
		if !strings.HasPrefix(va, "redacted:hmac-sha256:") || va != vb || va == vc {
			t.Errorf("%s: %q, %q (same key), %q (other key)", h, va, vb, vc)
		}
	}
	if a.Response.HeaderValue("Set-Cookie") == "" || a.Response.HeaderValue("Set-Cookie") != b.Response.HeaderValue("Set-Cookie") {
		t.Errorf("Set-Cookie %q %q", a.Response.HeaderValue("Set-Cookie"), b.Response.HeaderValue("Set-Cookie"))
	}
	// the same but for the port the client reached the proxy on
	host := regexp.MustCompile(`"host":"127.0.0.1:[0-9]+"`)
	if !bytes.Equal(host.ReplaceAll(dataA, nil), host.ReplaceAll(dataB, nil)) {
		t.Errorf("same key, same frozen session, different cassettes:\n%s\n%s", dataA, dataB)
	}
	if !bytes.Contains(dataA, []byte(`"redacted_headers":["api-key","authorization","cookie","proxy-authorization","set-cookie","x-amz-security-token","x-api-key","x-custom-token","x-goog-api-key"]`)) {
		t.Errorf("header:\n%s", dataA)
	}
}

// TestBodyRedaction: the --redact rules apply to JSON bodies and to SSE
// data lines before they are written; the client gets the real bytes.
func TestBodyRedaction(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: x\ndata: {\"token\":\"resp-secret\",\"ok\":1}\n\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	rule, err := derive.ParseRedactRule("$..token")
	if err != nil {
		t.Fatal(err)
	}
	red, err := derive.NewRedactor([]derive.RedactRule{rule}, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := startProxy(t, up.URL, Options{Redactor: red})
	_, body := post(t, s.URL+"/v1/chat/completions", `{"messages":[{"content":"x"}],"token":"req-secret"}`, nil)
	if body != "event: x\ndata: {\"token\":\"resp-secret\",\"ok\":1}\n\ndata: [DONE]\n\n" {
		t.Errorf("client got %q", body)
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	h, xs, data := s.cassette()
	for _, sec := range []string{"req-secret", "resp-secret"} {
		if bytes.Contains(data, []byte(sec)) {
			t.Errorf("%s reached the cassette:\n%s", sec, data)
		}
	}
	if len(h.Redaction) == 0 || !strings.HasPrefix(h.HeaderKey, "sha256:") {
		t.Errorf("header %+v", h)
	}
	if got := string(xs[0].Request.Body()); got != `{"messages":[{"content":"x"}],"token":"`+red.Token([]byte("req-secret"))+`"}` {
		t.Errorf("recorded request %s", got)
	}
	if got := string(xs[0].Response.Body()); !strings.Contains(got, "data: {\"token\":\""+red.Token([]byte("resp-secret"))+"\",\"ok\":1}\n") {
		t.Errorf("recorded response %q", got)
	}
	if xs[0].Response.Bytes != int64(len(body)) {
		t.Errorf("recorded %d wire bytes, want %d", xs[0].Response.Bytes, len(body))
	}
}

// TestUpstreamDown: an unreachable upstream is answered 502 with an
// OpenAI-style error body and recorded as a failed exchange; the session
// end says so.
func TestUpstreamDown(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	addr := up.URL
	up.Close()
	s := startProxy(t, addr, Options{})
	resp, body := post(t, s.URL+"/v1/chat/completions", `{}`, nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `"error":{"code":"witness_upstream_error","message":"witness proxy: upstream: `) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	_, body = post(t, s.URL+"/v1/messages", `{}`, nil)
	if !strings.HasPrefix(body, `{"error":{"message":"witness proxy: upstream: `) || !strings.Contains(body, `"type":"error"`) {
		t.Errorf("anthropic-style: %s", body)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Failure, "exchange 1: upstream: ") {
		t.Errorf("failure %q", res.Failure)
	}
	_, xs, _ := s.cassette()
	if xs[0].Error == "" || xs[0].Status != 502 || xs[0].Response != nil {
		t.Errorf("exchange %+v", xs[0])
	}
	rep, _ := s.verifyEvents()
	if _, why := verified(rep); !strings.Contains(why, "is incomplete") || !strings.Contains(why, "exchange 1: upstream: ") {
		t.Errorf("events: %s", why)
	}
}

// TestSignalWhileStreaming: SIGTERM during a stream that never ends: after
// the grace the stream is cut off, the client sees an aborted connection
// (not a clean end), the cassette says so and the log ends signed.
func TestSignalWhileStreaming(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	s := startProxy(t, up.URL, Options{ShutdownGrace: 100 * time.Millisecond})
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: {\"n\":1}\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the client read a clean end of a cut-off stream")
	}
	if !strings.Contains(res.Failure, "exchange 1: response cut off at the end of the session") {
		t.Errorf("failure %q", res.Failure)
	}
	_, xs, _ := s.cassette()
	if xs[0].Response.EndDetail != "cut off at the end of the session" || string(xs[0].Response.Body()) != string(first) {
		t.Errorf("response %+v", xs[0].Response)
	}
	rep, _ := s.verifyEvents()
	if _, why := verified(rep); !rep.Ended || rep.Signatures[0].Status != "valid" || !strings.Contains(why, "is incomplete") {
		t.Errorf("events %s ended %v %+v", why, rep.Ended, rep.Signatures)
	}
}

// countingReader yields n bytes of 'a' without holding them.
type countingReader struct{ left int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > c.left {
		n = c.left
	}
	for i := range p[:n] {
		p[i] = 'a'
	}
	c.left -= n
	return int(n), nil
}

// TestLargeBodiesBoundedMemory: a 100 MB request body and a 100 MB
// response body stream through the proxy and into the cassette while the
// heap stays far below either size.
func TestLargeBodiesBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 200 MB")
	}
	const size = 100 << 20
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n != size {
			t.Errorf("upstream got %d bytes", n)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, &countingReader{left: size})
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	// PeakInUse collects first: what earlier tests left behind is not
	// this test's heap
	var (
		n   int64
		err error
	)
	peak := memtest.PeakInUse(func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/upload", &countingReader{left: size})
		req.ContentLength = size
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err != nil {
			return
		}
		n, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	if err != nil || n != size {
		t.Fatalf("client read %d bytes: %v", n, err)
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if peak > 48<<20 {
		t.Errorf("peak heap in use %d MiB while moving 2 x 100 MiB", peak>>20)
	}
	t.Logf("peak heap in use: %d MiB", peak>>20)
	f, err := os.Open(filepath.Join(s.Dir, derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, xs, err := cassette.ReadHTTPExchanges(f, "cassette.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if xs[0].Request.Bytes != size || xs[0].Response.Bytes != size {
		t.Errorf("recorded %d and %d bytes", xs[0].Request.Bytes, xs[0].Response.Bytes)
	}
}

// testDeriver records a model_input per request and a model_output per
// answer, linked: the hook's contract.
type testDeriver struct{}

func (testDeriver) DeriveRequest(x *cassette.HTTPExchange) ([]eventlog.Event, error) {
	e := eventlog.Event{Kind: eventlog.KindModelInput, Role: "user"}
	if err := eventlog.SetPayload(&e, json.RawMessage(x.Request.Body())); err != nil {
		return nil, err
	}
	return []eventlog.Event{e}, nil
}

func (testDeriver) DeriveResponse(x *cassette.HTTPExchange, in []string) ([]eventlog.Event, error) {
	if x.Response == nil || len(in) != 1 {
		return nil, fmt.Errorf("exchange %d: no answer", x.X)
	}
	e := eventlog.Event{Kind: eventlog.KindModelOutput, Role: "assistant", Input: in[0]}
	if err := eventlog.SetPayload(&e, json.RawMessage(x.Response.Body())); err != nil {
		return nil, err
	}
	return []eventlog.Event{e}, nil
}

// TestDeriverHook: the deriver's events land in the log, the output links
// to its input, and the log verifies.
func TestDeriverHook(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"content":"pong"}`))
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{Deriver: testDeriver{}})
	post(t, s.URL+"/v1/messages", `{"content":"ping"}`, nil)
	post(t, s.URL+"/v1/messages", `{"content":"ping 2"}`, nil)
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	rep, data := s.verifyEvents()
	if ok, why := verified(rep); !ok || rep.Events != 4 {
		t.Fatalf("%s, %d events\n%s", why, rep.Events, data)
	}
	for _, want := range []string{
		`"id":"e1","kind":"model_input","payload":{"content":"ping"}`,
		`"id":"e2","input":"e1","kind":"model_output","payload":{"content":"pong"}`,
		`"id":"e4","input":"e3","kind":"model_output"`,
	} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("no %s in\n%s", want, data)
		}
	}
}

// TestEarlyAnswer: an upstream that answers before reading the request
// body (413 for a body too large) is forwarded, and the request body is
// recorded as cut off: only what the upstream read went through.
func TestEarlyAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		w.Write([]byte(`{"error":"too large"}`))
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/x", &countingReader{left: 8 << 20})
	req.ContentLength = 8 << 20
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != `{"error":"too large"}` {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, xs, _ := s.cassette()
	x := xs[0]
	if !x.Request.Ended || x.Request.Bytes >= 8<<20 {
		t.Errorf("request recorded %d bytes, ended %v %q", x.Request.Bytes, x.Request.Ended, x.Request.EndDetail)
	}
	if x.Response == nil || x.Response.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("response %+v", x.Response)
	}
}
