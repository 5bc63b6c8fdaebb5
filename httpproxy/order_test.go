package httpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
)

// eagerSSEServer is a hostile HTTP+SSE (2024-11-05) server: it answers a
// POSTed request on its stream as soon as it has decoded the message,
// before the request's body has ended, and keeps the stream open until
// the client goes. GET /poke sends a notification on the stream.
func eagerSSEServer(t *testing.T) *httptest.Server {
	answers := make(chan string, 8)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "event: endpoint\ndata: /messages?sessionId=e1\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-answers:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == "/messages":
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			answers <- `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"early"}]}}`
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodGet && r.URL.Path == "/poke":
			answers <- poked
		default:
			http.NotFound(w, r)
		}
	}))
}

const poked = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"poked"}}`

// TestMCPAnswerBeforeRequestEnd: an answer that reaches the proxy before
// the request's messages are written to the MCP session's cassette (the
// upstream answers on its stream before the client has ended the POST's
// body; or, as under load in TestPeersEverythingHTTP/sse, the recording
// of the request's end runs late) is written after them: a request precedes its
// answer in the session cassette, its log and its replay. Then the proxy
// is stopped with the stream still open: the stream is recorded as cut
// off, and the answer the client got is in both cassettes. Past the
// bound of what waits (here one message), the messages are written as
// they come and the session's log says so.
func TestMCPAnswerBeforeRequestEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		late  bool  // the body ends at once, its recording is held back
		order []int // 0 the call, 1 the answer, 2 a notification
		note  string
	}{
		{name: "body open", order: []int{0, 1, 2, 2}},
		{name: "late recording", late: true, order: []int{0, 1, 2, 2}},
		{name: "over the bound", limit: 100, order: []int{1, 2, 0, 2}, note: "some may precede the request they answer"},
	} {
		t.Run(tc.name, func(t *testing.T) { answerBeforeRequestEnd(t, tc.limit, tc.late, tc.order, tc.note) })
	}
}

func answerBeforeRequestEnd(t *testing.T, limit int, late bool, order []int, note string) {
	up := eagerSSEServer(t)
	defer up.Close()
	o := Options{ShutdownGrace: 100 * time.Millisecond, queueLimit: limit}
	release := make(chan struct{})
	if late {
		o.lateRequestEnd = func() { <-release }
	}
	s := startProxy(t, up.URL, o)
	keepOnFailure(t, s.Dir)
	stream, err := http.Get(s.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	br := bufio.NewReader(stream.Body)
	event := func() string {
		t.Helper()
		var ev []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			if l == "\n" {
				return strings.Join(ev, "")
			}
			ev = append(ev, l)
		}
	}
	if ev := event(); !strings.Contains(ev, "data: /messages?sessionId=e1") {
		t.Fatalf("endpoint event %q", ev)
	}
	pr, pw := io.Pipe()
	posted := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/messages?sessionId=e1", "application/json", pr)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				err = fmt.Errorf("POST: %s", resp.Status)
			}
		}
		posted <- err
	}()
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}`
	if _, err := io.WriteString(pw, call); err != nil {
		t.Fatal(err)
	}
	if late {
		pw.Close()
	}
	// the answer comes through while the request's body is still open
	answer := event()
	if !strings.Contains(answer, `"id":3`) {
		t.Fatalf("stream answer %q", answer)
	}
	// two more events through the stream: the proxy has fed a server
	// message to the session (written or queued it) before it forwards
	// the next one, so once the second has come through, the answer and
	// the first notification are in the session, while the body is still
	// open (the second may be fed before or after the body's end: it is
	// written after the request either way)
	for range 2 {
		if resp, err := http.Get(s.URL + "/poke"); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		if ev := event(); !strings.Contains(ev, "poked") {
			t.Fatalf("stream event %q", ev)
		}
	}
	pw.Close()
	close(release)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	res, err := s.stop() // the stream is still open: cut off after the grace
	if err != nil {
		t.Fatal(err)
	}
	if res.MCPSessions != 1 || !strings.Contains(res.Failure, "cut off at the end of the session") {
		t.Errorf("%d sessions, failure %q", res.MCPSessions, res.Failure)
	}
	_, xs, _ := s.cassette()
	if len(xs) != 4 || xs[0].Response == nil || xs[0].Response.EndDetail != "cut off at the end of the session" || !bytes.Contains(xs[0].Response.Body(), []byte(`"text":"early"`)) {
		t.Fatalf("HTTP cassette: %d exchanges, first %+v", len(xs), xs[0].Response)
	}

	// the session cassette: the request, then its answer
	got := sessionRecords(t, s.Dir, 1)
	msgs := []string{"c2s " + call, "s2c " + strings.TrimPrefix(strings.TrimSpace(answer), "event: message\ndata: "), "s2c " + poked}
	var want []string
	for _, i := range order {
		want = append(want, msgs[i])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("session cassette:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	evs, rep := sessionEvents(t, s.Dir, 1)
	if !rep.Ended || rep.Signatures[0].Status != "valid" {
		t.Errorf("session log ended %v, %+v", rep.Ended, rep.Signatures)
	}
	// the stream open at the end is cut off, in the session's log too
	failure := evs[len(evs)-1].End.Failure
	if !strings.Contains(failure, "cut off at the end of the session") || note != "" && !strings.Contains(failure, note) || note == "" && strings.Contains(failure, "precede") {
		t.Errorf("session log failure %q, want the cut-off and %q", failure, note)
	}
	if order[0] != 0 {
		return // the call's response came first: the deriver cannot pair it
	}
	var kinds []string
	for _, e := range evs {
		if e.Kind == eventlog.KindToolCall || e.Kind == eventlog.KindToolResponse {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if strings.Join(kinds, ",") != "tool_call,tool_response" {
		t.Errorf("session log: %v, want the call, then its response", kinds)
	}
}
