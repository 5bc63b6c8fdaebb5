package httpproxy

import (
	"bufio"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/serve/httpserve"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// recordFixture records three exchanges through the proxy: a JSON answer
// asked twice (with different answers), and an SSE stream in three
// chunks. It returns the cassette's path.
func recordFixture(t *testing.T) string {
	t.Helper()
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range []string{"event: message_start\ndata: {\"a\":1}\n\n", "event: content_block_delta\ndata: {\"b\":2}\n\n", "event: message_stop\ndata: {}\n\n"} {
				io.WriteString(w, e)
				http.NewResponseController(w).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"answer":%d}`, n.Add(1))
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	post(t, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"run-1"}`, nil)
	post(t, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"run-1"}`, nil)
	post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[]}`, nil)
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(s.Dir, derive.CassetteFile)
}

// replaying is a Replay.Serve running in the test.
type replaying struct {
	URL    string
	sigs   chan os.Signal
	done   chan struct{}
	res    *httpserve.ServeResult
	err    error
	stderr *syncBuffer
}

func startReplay(t *testing.T, path string, m httpserve.Matcher, o httpserve.ServeOptions) *replaying {
	t.Helper()
	rp, err := httpserve.LoadReplay(path, m)
	if err != nil {
		t.Fatal(err)
	}
	r := &replaying{sigs: make(chan os.Signal, 1), done: make(chan struct{}), stderr: &syncBuffer{}}
	ready := make(chan string, 1)
	o.Signals, o.Stderr, o.Ready = r.sigs, r.stderr, func(u string) { ready <- u }
	go func() {
		defer close(r.done)
		r.res, r.err = rp.Serve(o)
	}()
	select {
	case r.URL = <-ready:
	case <-r.done:
		t.Fatalf("serve did not start: %v", r.err)
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *replaying) stop() (*httpserve.ServeResult, error) {
	select {
	case <-r.done:
	default:
		r.sigs <- syscall.SIGINT
		<-r.done
	}
	return r.res, r.err
}

// TestReplayAnswers: recorded requests get their recorded answers, in
// recorded order for repeats, a stream chunk by chunk; every exchange used
// and no miss make a clean exit.
func TestReplayAnswers(t *testing.T) {
	path := recordFixture(t)
	r := startReplay(t, path, httpserve.Matcher{}, httpserve.ServeOptions{RequireAll: true})
	for i, want := range []string{`{"answer":1}`, `{"answer":2}`} {
		resp, body := post(t, r.URL+"/v1/chat/completions", `{"messages":[{"content":"hi","role":"user"}],"model":"m","user":"run-1"}`, nil)
		if resp.StatusCode != 200 || body != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("call %d: %d %q %v", i, resp.StatusCode, body, resp.Header)
		}
	}
	// the stream comes chunk by chunk: each event can be read before the
	// client asks for the next (the body is read event by event)
	resp, err := http.Post(r.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	resp.Body.Close()
	if got := strings.Join(lines, ""); got != "event: message_start\ndata: {\"a\":1}\n\nevent: content_block_delta\ndata: {\"b\":2}\n\nevent: message_stop\ndata: {}\n\n" {
		t.Errorf("stream %q", got)
	}
	res, err := r.stop()
	if err != nil || res.Served != 3 || res.Misses != 0 || res.Unused != 0 {
		t.Errorf("%+v %v", res, err)
	}
}

// TestReplayMiss: an unrecorded request is answered 400 with an error in
// the API's shape, explained with the nearest request and a diff, and
// makes serve end with exit code 4 (incomplete).
func TestReplayMiss(t *testing.T) {
	path := recordFixture(t)
	r := startReplay(t, path, httpserve.Matcher{}, httpserve.ServeOptions{})
	resp, body := post(t, r.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"bye"}],"user":"run-1"}`, nil)
	if resp.StatusCode != 400 || !strings.HasPrefix(body, `{"error":{"code":"witness_invalid_request_error","message":"witness serve: the cassette `) {
		t.Errorf("openai-style miss: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, r.URL+"/v1/messages", `{}`, nil)
	if resp.StatusCode != 400 || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, `"type":"invalid_request_error"`) {
		t.Errorf("anthropic-style miss: %d %s", resp.StatusCode, body)
	}
	res, err := r.stop()
	if exitcode.Of(err) != exitcode.Incomplete || res.Misses != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	out := r.stderr.String()
	for _, want := range []string{
		"witness: serve: miss: no recorded answer for POST /v1/chat/completions\n",
		"witness: serve: nearest recorded request (cassette line 2): POST /v1/chat/completions\n",
		"-       \"content\": \"hi\",\n",
		"+       \"content\": \"bye\",\n",
		"witness: serve: 3 recorded exchange(s) were not asked for",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
}

// TestReplayIgnoreField: volatile fields named by --ignore-field do not
// count, present or not; without it they do.
func TestReplayIgnoreField(t *testing.T) {
	path := recordFixture(t)
	m, err := httpserve.ParseIgnore([]string{"user", "$.stream_options"})
	if err != nil {
		t.Fatal(err)
	}
	r := startReplay(t, path, m, httpserve.ServeOptions{ExitAfter: 2})
	resp, body := post(t, r.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"run-2","stream_options":{"include_usage":true}}`, nil)
	if resp.StatusCode != 200 || body != `{"answer":1}` {
		t.Errorf("with ignored fields: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, r.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 200 || body != `{"answer":2}` {
		t.Errorf("without them: %d %s", resp.StatusCode, body)
	}
	<-r.done // --exit-after 2
	if r.err != nil || r.res.Served != 2 {
		t.Errorf("%+v %v", r.res, r.err)
	}
	// without the ignore list, another user is a miss
	r2 := startReplay(t, path, httpserve.Matcher{}, httpserve.ServeOptions{ExitAfter: 1})
	resp, _ = post(t, r2.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"run-2"}`, nil)
	<-r2.done
	if resp.StatusCode != 400 || exitcode.Of(r2.err) != exitcode.Incomplete {
		t.Errorf("%d %v", resp.StatusCode, r2.err)
	}
	if _, err := httpserve.ParseIgnore([]string{"$"}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("whole body: %v", err)
	}
}

// TestCassetteKind: serve tells the two cassette kinds apart by header.
func TestCassetteKind(t *testing.T) {
	path := recordFixture(t)
	if k, err := httpserve.CassetteKind(path); err != nil || k != "witness-http-cassette" {
		t.Errorf("%q %v", k, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"format\":\"x\"}\n"), 0o600)
	if _, err := httpserve.CassetteKind(bad); exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), "bad.jsonl:1: $.format: not a witness cassette") {
		t.Errorf("%v", err)
	}
	if _, err := httpserve.CassetteKind(filepath.Join(t.TempDir(), "none")); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("missing: %v", err)
	}
}
