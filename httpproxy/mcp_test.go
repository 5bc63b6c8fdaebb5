package httpproxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/modelapi"
	"github.com/agent-trace-witness/witness/serve/httpserve"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeMCP is a Streamable HTTP MCP server: initialize answered with JSON
// and a session id, tools/call with a server-sent event stream (a
// notification, then the answer), notifications with 202, a GET stream
// with one server notification, DELETE with 200.
type fakeMCP struct {
	mu   sync.Mutex
	n    int
	hits atomic.Int64
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case http.MethodDelete:
		w.WriteHeader(200)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &m)
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := func(result string) string {
		return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`
	}
	switch m.Method {
	case "initialize":
		f.mu.Lock()
		f.n++
		sid := fmt.Sprintf("sess-%d", f.n)
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`))
	case "tools/list":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "event: message\nid: 2\ndata: %s\n\n", answer(`{"content":[{"type":"text","text":`+string(m.Params.Arguments)+`}]}`))
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer(`{}`))
	}
}

// mcpCall POSTs one message and returns the response and its body.
func mcpCall(t *testing.T, url, sid, msg string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
		h["MCP-Protocol-Version"] = "2025-06-18"
	}
	return post(t, url, msg, h)
}

// runMCPSession runs initialize, initialized, tools/list, tools/call with
// text, and DELETE, and returns the tools/call answer.
func runMCPSession(t *testing.T, url, text string) string {
	resp, _ := mcpCall(t, url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	if resp, _ := mcpCall(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
		t.Errorf("initialized: %d", resp.StatusCode)
	}
	mcpCall(t, url, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	_, body := mcpCall(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+text+`"}}}`)
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	dr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	return body
}

// sessionEvents reads and verifies the event log of MCP session n.
func sessionEvents(t *testing.T, dir string, n int) ([]eventlog.Event, *eventlog.LogReport) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, MCPDir, fmt.Sprint(n), derive.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := hex.DecodeString(testKeyHex)
	rep, err := eventlog.VerifyLog(bytes.NewReader(data), "events.jsonl", eventlog.VerifyLogOptions{Verifier: hmacVerifier{key}})
	if rep == nil {
		t.Fatal(err)
	}
	var evs []eventlog.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e eventlog.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind != "" {
			evs = append(evs, e)
		}
	}
	return evs, rep
}

func TestMCPStreamableSessions(t *testing.T) {
	f := &fakeMCP{}
	up := httptest.NewServer(f)
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	direct := runMCPSession(t, up.URL+"/mcp", "direct")
	var wg sync.WaitGroup
	answers := make([]string, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = runMCPSession(t, s.URL+"/mcp", fmt.Sprintf("hello-%d", i))
		}()
	}
	wg.Wait()
	if want := strings.ReplaceAll(direct, "direct", "hello-0"); answers[0] != want {
		t.Errorf("through the proxy:\n%s\ndirect:\n%s", answers[0], want)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.MCPSessions != 2 {
		t.Fatalf("%d MCP sessions, want 2", res.MCPSessions)
	}
	seen := map[string]bool{}
	for n := 1; n <= 2; n++ {
		evs, rep := sessionEvents(t, s.Dir, n)
		if ok, why := verified(rep); !ok {
			t.Errorf("session %d: %s", n, why)
		}
		var call, answer, note int
		for _, e := range evs {
			switch e.Kind {
			case eventlog.KindToolCall:
				call++
				seen[string(e.Payload)] = true
			case eventlog.KindToolResponse:
				answer++
			case eventlog.KindSessionEnd:
				if !strings.Contains(e.End.Reason, "DELETE") {
					t.Errorf("session %d ends %q, want the DELETE named", n, e.End.Reason)
				}
				if e.End.Failure != "" {
					t.Errorf("session %d failure %q", n, e.End.Failure)
				}
			case eventlog.KindNotification:
				note++
			}
		}
		if call != 1 || answer != 1 || note < 1 {
			t.Errorf("session %d: %d calls, %d answers, %d notifications; want 1, 1, >= 1", n, call, answer, note)
		}
	}
	if !seen[`{"text":"hello-0"}`] || !seen[`{"text":"hello-1"}`] {
		t.Errorf("each session's call in its own log: %v", seen)
	}
	_, main := s.verifyEvents()
	if c := bytes.Count(main, []byte(methodMCPSession)); c != 2 {
		t.Errorf("main log names %d MCP sessions, want 2", c)
	}
}

// TestMCPGetStreamClosedByClient: a client closing the GET stream of its
// session ends it the normal way, not as a cut-off exchange.
func TestMCPGetStreamClosedByClient(t *testing.T) {
	up := httptest.NewServer(&fakeMCP{})
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, _ := mcpCall(t, s.URL+"/mcp", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Accept", "text/event-stream")
	gr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(gr.Body).ReadString('\n')
	gr.Body.Close()
	if !strings.HasPrefix(line, "event: message") {
		t.Fatalf("GET stream began %q", line)
	}
	time.Sleep(100 * time.Millisecond) // let the proxy see the close
	res, err := s.stop()
	if err != nil || res.Failure != "" {
		t.Fatalf("err %v, failure %q", err, res.Failure)
	}
	evs, _ := sessionEvents(t, s.Dir, 1)
	found := false
	for _, e := range evs {
		found = found || e.Method == "notifications/tools/list_changed"
	}
	if !found {
		t.Error("the GET stream's notification is not in the session log")
	}
}

// sseServer is an HTTP+SSE (2024-11-05) server under base whose endpoint
// event is endpoint(host); answers come on the stream.
func sseServer(t *testing.T, base string, endpoint func(host string) string) *httptest.Server {
	var mu sync.Mutex
	streams := map[string]chan string{}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == base+"/sse":
			ch := make(chan string, 8)
			mu.Lock()
			streams["abc"] = ch
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint(r.Host))
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-ch:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == base+"/messages" && r.URL.Query().Get("sessionId") == "abc":
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &m)
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "Accepted")
			if m.ID != nil {
				mu.Lock()
				ch := streams["abc"]
				mu.Unlock()
				ch <- `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`
			}
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
		}
	}))
}

func TestMCPHTTPSSEEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		endpoint   func(host string) string
		rewritten  bool
	}{
		{"relative", "", func(string) string { return "/messages?sessionId=abc" }, false},
		{"absolute", "", func(h string) string { return "http://" + h + "/messages?sessionId=abc" }, true},
		{"base path", "/base", func(string) string { return "/base/messages?sessionId=abc" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := sseServer(t, tc.base, tc.endpoint)
			defer up.Close()
			s := startProxy(t, up.URL+tc.base, Options{})
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/sse", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			br.ReadString('\n')
			data, _ := br.ReadString('\n')
			br.ReadString('\n')
			ep := strings.TrimSpace(strings.TrimPrefix(data, "data: "))
			if want := "/messages?sessionId=abc"; ep != want && ep != s.URL+want {
				t.Fatalf("the client got endpoint %q, want one on the proxy", ep)
			}
			if !strings.HasPrefix(ep, "http") {
				ep = s.URL + ep
			}
			r2, _ := post(t, ep, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`, map[string]string{"Content-Type": "application/json"})
			if r2.StatusCode != http.StatusAccepted {
				t.Fatalf("POST: %d", r2.StatusCode)
			}
			br.ReadString('\n')
			answer, _ := br.ReadString('\n')
			if !strings.Contains(answer, `"id":7`) {
				t.Fatalf("stream answer %q", answer)
			}
			resp.Body.Close()
			time.Sleep(50 * time.Millisecond)
			res, err := s.stop()
			if err != nil || res.MCPSessions != 1 || res.Failure != "" {
				t.Fatalf("err %v, %d sessions, failure %q", err, res.MCPSessions, res.Failure)
			}
			evs, rep := sessionEvents(t, s.Dir, 1)
			if ok, why := verified(rep); !ok {
				t.Error(why)
			}
			kinds := map[eventlog.Kind]int{}
			for _, e := range evs {
				kinds[e.Kind]++
			}
			if kinds[eventlog.KindToolCall] != 1 || kinds[eventlog.KindToolResponse] != 1 {
				t.Errorf("kinds %v", kinds)
			}
			_, main := s.verifyEvents()
			if got := bytes.Contains(main, []byte(methodEndpointRewrite)); got != tc.rewritten {
				t.Errorf("rewrite recorded %v, want %v", got, tc.rewritten)
			}
			// the HTTP cassette keeps what the upstream sent
			_, _, cas := s.cassette()
			if !bytes.Contains(cas, []byte(strings.TrimPrefix(tc.endpoint(strings.TrimPrefix(up.URL, "http://")), "http://"))) {
				t.Error("the cassette does not hold the endpoint as sent")
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	f := &fakeMCP{}
	up := httptest.NewServer(f)
	defer up.Close()
	s := startProxy(t, up.URL, Options{AllowOrigins: []string{"https://app.example"}})
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"", 200}, {"http://localhost:6274", 200}, {"http://127.0.0.1:9", 200}, {"https://app.example", 200},
		{"http://evil.example", 403}, {"null", 403}, {"http://localhost.evil.example", 403},
	} {
		h := map[string]string{"Content-Type": "application/json"}
		if tc.origin != "" {
			h["Origin"] = tc.origin
		}
		before := f.hits.Load()
		resp, body := post(t, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, h)
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q: %d %s, want %d", tc.origin, resp.StatusCode, body, tc.want)
		}
		if forwarded := f.hits.Load() > before; forwarded != (tc.want == 200) {
			t.Errorf("Origin %q: forwarded %v", tc.origin, forwarded)
		}
	}
	s.stop()
	_, xs, _ := s.cassette()
	refused := 0
	for _, x := range xs {
		if x.Status == 403 {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d refusals recorded, want 3", refused)
	}
}

// TestMCPAuthorizationPasses: a 401 with WWW-Authenticate and the
// protected-resource metadata reach the client unchanged; the bearer
// token reaches the disk only as a keyed hash.
func TestMCPAuthorizationPasses(t *testing.T) {
	const token = "Bearer secret-token-4242"
	meta := `{"resource":"http://mcp.example/mcp","authorization_servers":["https://auth.example"]}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, meta)
		case r.Header.Get("Authorization") != token:
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://mcp.example/.well-known/oauth-protected-resource"`)
			w.WriteHeader(401)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Set-Cookie", "sid=cookie-secret-77")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		}
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, _ := post(t, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="http://mcp.example/`) {
		t.Errorf("401: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	r, err := http.Get(s.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != meta {
		t.Errorf("metadata %q", b)
	}
	resp, _ = post(t, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": token})
	if resp.StatusCode != 200 || resp.Header.Get("Set-Cookie") != "sid=cookie-secret-77" {
		t.Errorf("authorized: %d %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	s.stop()
	filepath.Walk(s.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, secret := range []string{"secret-token-4242", "cookie-secret-77"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds %s", p, secret)
			}
		}
		return nil
	})
}

// TestMCPHostileUpstream: what a hostile server sends passes to the
// client as it came, in bounded memory, and the session log says what was
// not read, while the HTTP cassette keeps every byte received.
func TestMCPHostileUpstream(t *testing.T) {
	gz := func(n int) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"`))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for i := 0; i < n; i++ {
			zw.Write(chunk)
		}
		zw.Write([]byte(`"}}`))
		zw.Close()
		return b.Bytes()
	}
	bomb := gz(64) // 64 MiB of JSON in ~64 KiB
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		stopMid bool   // the session ends while the stream runs
		note    string // what the session log's failure says
		maxHeap uint64
	}{
		{name: "never-ending stream", stopMid: true, note: "cut off at the end of the session|not delivered", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "s1")
			for i := 0; r.Context().Err() == nil; i++ {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":%d}}\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(time.Millisecond)
			}
		}},
		{name: "100 MB event", note: "over 16 MiB", maxHeap: 64 << 20, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"x":"`)
			io.Copy(w, &countingReader{left: 100 << 20})
			io.WriteString(w, "\"}}\n\n")
		}},
		{name: "slow drip", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "s1")
			for _, c := range []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n") {
				w.Write([]byte{c})
				w.(http.Flusher).Flush()
				time.Sleep(2 * time.Millisecond)
			}
		}},
		{name: "wrong content type", note: "neither application/json nor text/event-stream", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, "<html>not MCP</html>")
		}},
		{name: "compression bomb", note: "compression bomb", maxHeap: 96 << 20, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Write(bomb)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.maxHeap > 0 {
				t.Skip("moves 100 MB")
			}
			up := httptest.NewServer(tc.handler)
			defer up.Close()
			s := startProxy(t, up.URL, Options{ShutdownGrace: 200 * time.Millisecond})
			// little garbage, so that the heap in use is about the live
			// heap (the bound is on what the proxy holds, not on when the
			// collector runs)
			defer debug.SetGCPercent(debug.SetGCPercent(10))
			runtime.GC()
			base := memtest.InUse()
			tr := &http.Transport{DisableCompression: true}
			defer tr.CloseIdleConnections()
			var (
				got int64
				res *Result
				err error
			)
			peak := memtest.PeakInUse(func() {
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept-Encoding", "gzip")
				var resp *http.Response
				if resp, err = (&http.Client{Transport: tr}).Do(req); err != nil {
					return
				}
				if tc.stopMid {
					buf := make([]byte, 4096)
					for got < 8<<10 {
						n, err := resp.Body.Read(buf)
						got += int64(n)
						if err != nil {
							break
						}
					}
					go s.stop()
					n, _ := io.Copy(io.Discard, resp.Body)
					got += n
				} else {
					got, _ = io.Copy(io.Discard, resp.Body)
				}
				resp.Body.Close()
				res, _ = s.stop()
			})
			if err != nil {
				t.Fatal(err)
			}
			grew := memtest.Grown(base, peak)
			if tc.maxHeap > 0 && grew > tc.maxHeap {
				t.Errorf("the heap grew by %d MiB, want under %d MiB", grew>>20, tc.maxHeap>>20)
			}
			t.Logf("client got %d bytes; the heap grew by %d MiB at most; failure %q", got, grew>>20, res.Failure)
			_, xs, _ := s.cassette()
			if len(xs) != 1 || xs[0].Response == nil {
				t.Fatalf("cassette: %d exchanges", len(xs))
			}
			if rec := xs[0].Response.Bytes; rec < got {
				t.Errorf("the cassette holds %d response bytes, the client got %d", rec, got)
			}
			evs, _ := sessionEvents(t, s.Dir, 1)
			end := evs[len(evs)-1]
			if tc.note == "" {
				if end.End.Failure != "" {
					t.Errorf("failure %q", end.End.Failure)
				}
				found := false
				for _, e := range evs {
					found = found || e.Kind == eventlog.KindToolResponse
				}
				if !found {
					t.Error("no tool_response derived from the drip")
				}
			} else if !slices.ContainsFunc(strings.Split(tc.note, "|"), func(n string) bool { return strings.Contains(end.End.Failure, n) }) {
				t.Errorf("session failure %q, want it to say %q", end.End.Failure, tc.note)
			}
		})
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the redirect was followed")
	}))
	defer other.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	resp, _ := post(t, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	if resp.StatusCode != 307 || resp.Header.Get("Location") != other.URL+"/mcp" {
		t.Errorf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func FuzzMCPExchange(f *testing.F) {
	f.Add([]byte("event: endpoint\ndata: /messages?sessionId=1\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), 7)
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]`), 3)
	up, _ := url.Parse("http://up.example/base")
	f.Fuzz(func(t *testing.T, body []byte, cut int) {
		msgs := httplocal.SplitMessages(body)
		for _, m := range msgs {
			if len(m) > len(body) {
				t.Fatal("a message longer than its body")
			}
		}
		// a small budget: events past it are dropped (SSEParser.Drop)
		tr := &mcpTracker{up: up, self: "http://127.0.0.1:1", byKey: map[string]*mcpSession{}, byEndpoint: map[string]*mcpSession{}, budget: newBudget(int64(1 + len(body)%2048))}
		tr.rewriteEndpoint(string(body))
		e := &mcpExchange{t: tr, method: http.MethodGet, uri: "/sse", hold: true, from: "/messages?sessionId=1", to: "/m"}
		e.sseMem.b = tr.budget
		e.sse = modelapi.NewSSEParser(1<<10, e.event, e.skip)
		if cut < 0 || cut > len(body) {
			cut = len(body) / 2
		}
		var out []byte
		for _, part := range [][]byte{body[:cut], body[cut:]} {
			e.respChunk(part)
			out = append(out, e.forward(part)...)
		}
		out = append(out, e.release()...)
		if !bytes.Equal(out, body) && !bytes.Equal(out, bytes.Replace(body, []byte(e.from), []byte(e.to), 1)) {
			t.Fatalf("forwarded %q for %q", out, body)
		}
	})
}

// dataLines returns the data: lines of a server-sent event body, or the
// body itself when it is JSON.
func dataLines(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "data: "); ok {
			out = append(out, v)
		}
	}
	if out == nil && strings.TrimSpace(body) != "" {
		out = []string{strings.TrimSpace(body)}
	}
	return out
}

func TestServeMCPReplaysProxySession(t *testing.T) {
	up := httptest.NewServer(&fakeMCP{})
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	recorded := runMCPSession(t, s.URL+"/mcp", "replay me")
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	var stderr syncBuffer
	type out struct {
		res *httpserve.MCPServeResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := httpserve.ServeMCP(filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile), httpserve.MCPServeOptions{Listen: httplocal.DefaultListen, ExitAfter: 1, Stderr: &stderr, Ready: func(u string) { ready <- u }})
		done <- out{res, err}
	}()
	u := <-ready
	replayed := runMCPSession(t, u+"/mcp", "replay me")
	o := <-done
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, stderr.String())
	}
	if o.res.Sessions != 1 || o.res.Served != 3 || o.res.Misses != 0 {
		t.Errorf("result %+v", o.res)
	}
	if a, b := dataLines(recorded), dataLines(replayed); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("recorded:\n%s\nreplayed:\n%s", a, b)
	}
	// a request the recording does not hold is a miss: exit code 4
	go func() {
		res, err := httpserve.ServeMCP(filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile), httpserve.MCPServeOptions{Listen: httplocal.DefaultListen, ExitAfter: 1, Stderr: &stderr, Ready: func(u string) { ready <- u }})
		done <- out{res, err}
	}()
	u = <-ready
	missed := runMCPSession(t, u+"/mcp", "something else")
	o = <-done
	if o.err == nil || o.res.Misses != 1 || !strings.Contains(missed, "-32050") {
		t.Errorf("a miss: err %v, result %+v, answer %s", o.err, o.res, missed)
	}
}
