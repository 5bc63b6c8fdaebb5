package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMCP is a small Streamable HTTP server: initialize gives a session
// id; tools/list lists "echo"; tools/call echoes; answers are JSON or SSE
// (sse), a tools/call stream may first carry a server ping (serverPing),
// or end after a priming event so that the client resumes (resume); the
// GET stream is refused with 405 unless getStream.
type fakeMCP struct {
	sse, serverPing, resume, getStream, elicit bool

	mu       sync.Mutex
	initBody string   // the initialize request
	seen     []string // "METHOD jsonrpc-method session protocol-header"
	answers  []string // bodies of the client's answers to server requests
	lastID   string   // Last-Event-ID of a resumption
	deleted  bool
	pendResp []byte // the response owed on the resumed stream
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	f.mu.Lock()
	f.seen = append(f.seen, fmt.Sprintf("%s %s %s %s", r.Method, m.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version")))
	f.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		f.mu.Lock()
		f.deleted = true
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		if last := r.Header.Get("Last-Event-Id"); last != "" {
			f.mu.Lock()
			f.lastID = last
			resp := f.pendResp
			f.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: r2\ndata: %s\n\n", resp)
			return
		}
		if !f.getStream {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"from GET\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if m.Method == "" && m.ID != nil { // the client's answer to a server request
		f.mu.Lock()
		f.answers = append(f.answers, string(body))
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch m.Method {
	case "initialize":
		f.mu.Lock()
		f.initBody = string(body)
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "sess-1")
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1.0"}}`
	case "tools/list":
		result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":` + string(m.Params.Arguments) + `}]}`
	default:
		result = `{}`
	}
	resp := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
	if !f.sse {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if m.Method == "tools/call" && f.elicit {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"el\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}
	if m.Method == "tools/call" && f.serverPing {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}
	if m.Method == "tools/call" && f.resume {
		f.mu.Lock()
		f.pendResp = resp
		f.mu.Unlock()
		fmt.Fprintf(w, "id: r1\nretry: 10\ndata: \n\n")
		return
	}
	fmt.Fprintf(w, "id: e1\ndata: \n\nevent: message\nid: e2\ndata: %s\n\n", resp)
}

type httpCaptured struct {
	res      *CaptureResult
	err      error
	cassette []byte // the messages
	http     []byte // the HTTP exchanges
	events   []byte
}

func runHTTPCapture(t *testing.T, url string, calls []ScenarioCall, mod func(*LiveOptions)) *httpCaptured {
	t.Helper()
	dir := t.TempDir()
	lo := LiveOptions{URL: url, Header: http.Header{"Authorization": {"Bearer s3cret-token"}}, Timeout: 5 * time.Second,
		Getenv: func(k string) string {
			if k == eventlog.EnvTS {
				return frozenTS
			}
			return ""
		}}
	if mod != nil {
		mod(&lo)
	}
	res, err := RunCapture(CaptureOptions{LiveOptions: lo, OutDir: dir, Files: atomicfile.Options{Flag: "--out"}, Calls: calls})
	c := &httpCaptured{res: res, err: err}
	c.cassette, _ = os.ReadFile(filepath.Join(dir, derive.CassetteFile))
	c.events, _ = os.ReadFile(filepath.Join(dir, derive.EventsFile))
	c.http, _ = os.ReadFile(filepath.Join(dir, derive.HTTPCassetteFile))
	return c
}

func kindsOf(t *testing.T, events []byte) []string {
	t.Helper()
	var kinds []string
	for _, line := range bytes.Split(bytes.TrimSpace(events), []byte("\n")) {
		var e struct {
			Kind   string `json:"kind"`
			Method string `json:"method"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		k := e.Kind
		if e.Kind == "notification" || e.Kind == "mcp_request" || e.Kind == "mcp_response" {
			k += ":" + e.Method
		}
		kinds = append(kinds, k)
	}
	return kinds
}

// checkHTTPRederive re-derives the events from the message cassette, as
// for a stdio capture, and compares bytes with the live log; the HTTP
// cassette reads back.
func checkHTTPRederive(t *testing.T, c *httpCaptured) {
	t.Helper()
	lvCheckRederive(t, &lvCaptured{cassette: c.cassette, events: c.events})
	if _, _, err := cassette.ReadHTTPExchanges(bytes.NewReader(c.http), derive.HTTPCassetteFile, -1); err != nil {
		t.Fatalf("HTTP cassette: %v", err)
	}
}

func TestHTTPCaptureJSONAndSSE(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			f := &fakeMCP{sse: sse}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c := runHTTPCapture(t, srv.URL+"/mcp", []ScenarioCall{{Tool: "echo", Arguments: json.RawMessage(`{"m":"hi"}`)}}, nil)
			if c.err != nil {
				t.Fatalf("capture: %v", c.err)
			}
			if c.res.Calls != 1 || c.res.Tools != 1 || c.res.Server.Name != "fake" {
				t.Fatalf("result %+v", c.res)
			}
			kinds := kindsOf(t, c.events)
			if got := strings.Join(kinds, " "); !strings.Contains(got, "tool_call tool_response session_end") {
				t.Fatalf("event kinds: %s", got)
			}
			for _, b := range [][]byte{c.cassette, c.http, c.events} {
				if bytes.Contains(b, []byte("s3cret")) {
					t.Fatal("the Authorization value reached the disk")
				}
			}
			if !bytes.Contains(c.http, []byte(`["Authorization","redacted:hmac-sha256:`)) {
				t.Fatal("the Authorization header is not recorded as a keyed hash")
			}
			f.mu.Lock()
			seen := strings.Join(f.seen, "\n")
			deleted := f.deleted
			f.mu.Unlock()
			// initialize goes without session and protocol headers; every
			// later request carries both
			for _, want := range []string{"POST initialize  \n", "POST notifications/initialized sess-1 2025-06-18", "GET  sess-1 2025-06-18", "POST tools/call sess-1 2025-06-18", "DELETE  sess-1 2025-06-18"} {
				if !strings.Contains(seen+"\n", want) {
					t.Errorf("server did not see %q; saw:\n%s", want, seen)
				}
			}
			if !deleted {
				t.Error("no DELETE at the end of the session")
			}
			checkHTTPRederive(t, c)
		})
	}
}

// A server request on the POST's stream is answered with a POST; a
// notification on the GET stream becomes an event; both are in the
// re-derived log too.
func TestHTTPCaptureServerMessages(t *testing.T) {
	f := &fakeMCP{sse: true, serverPing: true, getStream: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := runHTTPCapture(t, srv.URL+"/mcp", []ScenarioCall{{Tool: "echo", Arguments: json.RawMessage(`{"m":1}`)}}, nil)
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	f.mu.Lock()
	answers := strings.Join(f.answers, "\n")
	f.mu.Unlock()
	if !strings.Contains(answers, `"id":"s1","result":{}`) {
		t.Fatalf("ping not answered: %q", answers)
	}
	if !bytes.Contains(c.events, []byte(`"from GET"`)) {
		t.Fatalf("the GET stream's notification is not an event:\n%s", c.events)
	}
	if !bytes.Contains(c.http, []byte(`"detail":"closed by witness at the end of the session"`)) {
		t.Fatal("the GET stream's end does not say the client closed it")
	}
	checkHTTPRederive(t, c)
}

// A scenario's other requests and scripted answers work over HTTP as on
// stdio: the answer declares the capability in initialize and answers the
// server's elicitation/create, which arrives on the tool call's stream.
func TestHTTPCaptureScenarioAnswers(t *testing.T) {
	f := &fakeMCP{sse: true, elicit: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	calls, _, err := ParseScenario([]byte(`[{"method":"ping"},{"tool":"echo","arguments":{}},{"answer":"elicitation/create","result":{"action":"accept","content":{"name":"Ada"}}}]`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	c := runHTTPCapture(t, srv.URL+"/mcp", calls, nil)
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	if c.res.Requests != 1 || c.res.Calls != 1 {
		t.Fatalf("result %+v", c.res)
	}
	f.mu.Lock()
	init, answers := f.initBody, strings.Join(f.answers, "\n")
	f.mu.Unlock()
	if !strings.Contains(init, `"elicitation":{"form":{},"url":{}}`) {
		t.Errorf("initialize declares no elicitation: %s", init)
	}
	if !strings.Contains(answers, `"id":"el","result":{"action":"accept","content":{"name":"Ada"}}`) {
		t.Errorf("elicitation not answered as scripted: %q", answers)
	}
	checkHTTPRederive(t, c)
}

// A POST stream that ends before the response is resumed with GET and
// Last-Event-ID after the server's retry.
func TestHTTPCaptureResume(t *testing.T) {
	f := &fakeMCP{sse: true, resume: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := runHTTPCapture(t, srv.URL+"/mcp", []ScenarioCall{{Tool: "echo", Arguments: json.RawMessage(`{"m":2}`)}}, nil)
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	f.mu.Lock()
	last := f.lastID
	f.mu.Unlock()
	if last != "r1" {
		t.Fatalf("Last-Event-ID %q, want r1", last)
	}
	if c.res.Calls != 1 || !strings.Contains(strings.Join(kindsOf(t, c.events), " "), "tool_call tool_response") {
		t.Fatalf("the resumed response is not paired:\n%s", c.events)
	}
	checkHTTPRederive(t, c)
}

// Hostile and broken servers: each gives a clear error (exit code 5), and
// the cassette and the log keep what was received.
func TestHTTPCaptureErrors(t *testing.T) {
	redirected := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirected <- struct{}{} }))
	defer target.Close()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		maxMsg  int
		want    string // in the error
		hint    string // in the hint
	}{
		{"401", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
		}, 0, "HTTP 401 Unauthorized", `WWW-Authenticate: Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "boom")
		}, 0, `HTTP 500 Internal Server Error: "boom"`, "the cassette holds"},
		{"wrong content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>login</html>")
		}, 0, `content type "text/html"`, "application/json or text/event-stream"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
		}, 0, "302 Found", "does not follow redirects"},
		{"compressed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bytes.Repeat([]byte{0x1f}, 100))
		}, 0, `content encoding "gzip"`, ""},
		{"big JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(bytes.Repeat([]byte(" "), 1<<20))
		}, 64 << 10, "over the limit of 65536 bytes", "--max-line"},
		{"big SSE event", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: ")
			chunk := bytes.Repeat([]byte("x"), 32<<10)
			for i := 0; i < 3200; i++ { // 100 MiB, if the client read it all
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, 64 << 10, "SSE event of more than 64 KiB", "--max-line"},
		{"slow drip", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for {
				if _, err := io.WriteString(w, ": still here\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}, 0, "did not answer initialize (id 1) within 500ms", "raise --timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			before := memtest.Allocated()
			c := runHTTPCapture(t, srv.URL+"/mcp", nil, func(o *LiveOptions) {
				o.MaxLine = tc.maxMsg
				o.Timeout = 500 * time.Millisecond
			})
			if c.err == nil {
				t.Fatal("no error")
			}
			if exitcode.Of(c.err) != exitcode.Failure {
				t.Errorf("exit code %v, want failure", exitcode.Of(c.err))
			}
			if !strings.Contains(c.err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", c.err, tc.want)
			}
			if !strings.Contains(exitcode.HintOf(c.err), tc.hint) {
				t.Errorf("hint %q does not contain %q", exitcode.HintOf(c.err), tc.hint)
			}
			// what was received is kept: the request, the answer's head, the
			// end of its body; the log's end records the failure
			if _, xs, err := cassette.ReadHTTPExchanges(bytes.NewReader(c.http), "c", -1); err != nil || len(xs) == 0 || xs[0].Response == nil || !xs[0].Response.Ended {
				t.Fatalf("cassette: %v, %d exchanges", err, len(xs))
			}
			if !bytes.Contains(c.events, []byte(`"failure":"capture error: `)) {
				t.Fatalf("the log's end records no failure:\n%s", c.events)
			}
			// bounded memory: the client stops at the limit, whatever the
			// server would send
			if grown := memtest.Grown(before, memtest.Allocated()); grown > 48<<20 {
				t.Errorf("the capture allocated %d MiB", grown>>20)
			}
			select {
			case <-redirected:
				t.Fatal("the redirect was followed")
			default:
			}
		})
	}
}

func TestParseServerURL(t *testing.T) {
	for _, bad := range []string{"ftp://x/mcp", "http:///mcp", "http://user:pw@x/mcp", "http://x/mcp#frag", "::"} {
		if _, err := ParseServerURL(bad); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
	if _, err := ParseServerURL("https://example.com/mcp?x=1"); err != nil {
		t.Errorf("good URL: %v", err)
	}
}

// FuzzHTTPAnswer feeds arbitrary answers (a JSON or SSE body, cut into
// chunks anywhere) to the client's reading of a POST's answer: it never
// panics, the message cassette it writes reads back and the HTTP cassette
// too.
func FuzzHTTPAnswer(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), true, uint8(7))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), false, uint8(3))
	f.Add([]byte("retry: 5\nid: x\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":\"x\"}\r\n\r\ndata: [1,2]\n\n:c\n"), true, uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, sse bool, cut uint8) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		n := int(cut)%8 + 1
		posts := 0
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost {
				posts++
			}
			if r.Method == http.MethodPost && posts > 1 { // the client's answers to server requests
				return &http.Response{StatusCode: http.StatusAccepted, Proto: "HTTP/1.1", Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}, nil
			}
			if r.Method != http.MethodPost {
				return &http.Response{StatusCode: http.StatusMethodNotAllowed, Proto: "HTTP/1.1", Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}, nil
			}
			return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(&chunkReader{b: body, n: n})}, nil
		})
		var hc, mc bytes.Buffer
		key, id, err := headerKey(nil, bytes.Repeat([]byte{1}, 32))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := newHTTPRecorder(&hc, cassette.HTTPFileHeader{Mode: "client", Upstream: "http://x/mcp", Started: frozenTS, Frozen: true}, key, id, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		cw, err := cassette.NewWriter(&mc, cassette.Header{Command: "http://x/mcp", Started: frozenTS, Frozen: true, Mode: "client"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := startHTTP(httpOptions{URL: "http://x/mcp", Recorder: rec, Messages: cw, Transport: rt, Timeout: time.Second, MaxMessage: 4 << 10, Linger: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Request("tools/list", json.RawMessage(`{}`))
		c.Close()
		if _, _, err := cassette.ReadHTTPExchanges(bytes.NewReader(hc.Bytes()), "http.jsonl", -1); err != nil {
			t.Fatalf("HTTP cassette: %v", err)
		}
		cr, err := cassette.NewReader(bytes.NewReader(mc.Bytes()), "cassette.jsonl")
		if err != nil {
			t.Fatalf("message cassette: %v", err)
		}
		for {
			if _, err := cr.Next(); err != nil {
				if err != io.EOF {
					t.Fatalf("message cassette: %v", err)
				}
				break
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// chunkReader hands out b n bytes at a time.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(r.b), len(p))
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}

const frozenTS = "2026-08-30T14:33:00+00:00"
