package httpproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// failingWriter fails every write that holds marker once armed, as a full
// disk would.
type failingWriter struct {
	w      io.Writer
	marker []byte
	armed  atomic.Bool
	mu     sync.Mutex
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed.Load() && bytes.Contains(p, f.marker) {
		return 0, errors.New("no space left on device (test)")
	}
	return f.w.Write(p)
}

// TestFailClosed: when the cassette cannot be written, nothing unrecorded
// is forwarded. A request head that cannot be recorded never reaches the
// upstream (the client gets the witness's error); an answer whose first
// body chunk cannot be recorded never reaches the client (the connection
// is aborted, no byte of the body is delivered); after the failure the
// proxy forwards nothing more and stops with the recording error.
func TestFailClosed(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"secret":"not yet recorded"}}`
	for _, c := range []struct {
		name, marker string
		upstreamHits int64 // requests the upstream saw after the writer was armed
	}{
		{"request head", `"rec":"request"`, 0},
		{"response body", `"rec":"response_body"`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				hits.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(answer))
			}))
			defer up.Close()
			fw := &failingWriter{marker: []byte(c.marker)}
			s := startProxy(t, up.URL, Options{wrapCassette: func(w io.Writer) io.Writer { fw.w = w; return fw }})
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
			if resp, got := post(t, s.URL+"/mcp", body, map[string]string{"Content-Type": "application/json"}); resp.StatusCode != 200 || got != answer {
				t.Fatalf("before the failure: %d %q", resp.StatusCode, got)
			}
			fw.armed.Store(true)
			before := hits.Load()
			resp, err := http.Post(s.URL+"/mcp", "application/json", strings.NewReader(body))
			var got []byte
			if err == nil {
				got, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if bytes.Contains(got, []byte("not yet recorded")) {
				t.Errorf("the client got bytes that are not in the cassette: %q", got)
			}
			if n := hits.Load() - before; n != c.upstreamHits {
				t.Errorf("the upstream saw %d requests after the failure, want %d", n, c.upstreamHits)
			}
			// nothing more is forwarded
			fw.armed.Store(false)
			if resp, err := http.Post(s.URL+"/mcp", "application/json", strings.NewReader(body)); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if bytes.Contains(b, []byte("not yet recorded")) {
					t.Errorf("forwarded after the recording failed: %d %q", resp.StatusCode, b)
				}
			}
			if n := hits.Load() - before; n != c.upstreamHits {
				t.Errorf("the upstream saw %d requests after the failure, want %d", n, c.upstreamHits)
			}
			if _, err := s.stop(); err == nil || !strings.Contains(err.Error(), "recording failed") {
				t.Errorf("the proxy ended with %v, want the recording failure", err)
			}
		})
	}
}

// TestFailClosedGetStream: a GET stream whose next event cannot be
// recorded is a recording failure, not a stream the client closed: the
// client gets no byte of the event, the stream is not recorded as ended,
// and the proxy stops with the failure (exit 5).
func TestFailClosedGetStream(t *testing.T) {
	send := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-send:
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"not yet recorded\"}}\n\n")
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
		}
		<-r.Context().Done()
	}))
	defer up.Close()
	fw := &failingWriter{marker: []byte(`"rec":"response_body"`)}
	s := startProxy(t, up.URL, Options{wrapCassette: func(w io.Writer) io.Writer { fw.w = w; return fw }})
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", "s-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	fw.armed.Store(true)
	close(send)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(got, []byte("not yet recorded")) {
		t.Errorf("the client got bytes that are not in the cassette: %q", got)
	}
	res, err := s.stop()
	if err == nil || !strings.Contains(err.Error(), "recording failed") || !strings.Contains(res.Failure, "recording failed") {
		t.Fatalf("the proxy ended with %v, failure %q; want the recording failure", err, res.Failure)
	}
	// the cassette refuses every write after its first failure: the
	// stream stays open in it (read as cut off), never closed by the client
	_, xs, _ := s.cassette()
	if len(xs) != 1 || xs[0].Response == nil || xs[0].Response.Ended {
		t.Fatalf("want the stream open in the cassette: %d exchanges, %+v", len(xs), xs[0].Response)
	}
}
