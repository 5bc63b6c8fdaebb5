package httpproxy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/verify"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClosedStreamDetails: the details the proxy writes for a GET stream
// the client closed are the ones derive.ResponseNote takes for a normal
// end, so a log re-derived from the cassette says what the live one says.
func TestClosedStreamDetails(t *testing.T) {
	for _, rec := range []cassette.HTTPRecord{
		{Rec: cassette.RecResponseEnd, Detail: detailClosedByClient},
		{Rec: cassette.RecError, Detail: detailClosedBeforeAnswer},
	} {
		if n := derive.ResponseNote(1, &rec); n != "" {
			t.Errorf("%s %q: note %q, want none", rec.Rec, rec.Detail, n)
		}
	}
	for _, rec := range []cassette.HTTPRecord{
		{Rec: cassette.RecResponseEnd, Detail: "not delivered: the client went away: write: broken pipe"},
		{Rec: cassette.RecError, Detail: "upstream: context canceled"},
		{Rec: cassette.RecResponseEnd, Detail: detailClosedBeforeAnswer},
	} {
		if n := derive.ResponseNote(1, &rec); n == "" {
			t.Errorf("%s %q: no note", rec.Rec, rec.Detail)
		}
	}
}

// holdGetMCP is fakeMCP, but a GET stream gets no answer at all until the
// client goes: as the conformance suite meets server-everything's GET
// stream, whose head is not sent before its first event.
type holdGetMCP struct {
	fakeMCP
	gets atomic.Int64
}

func (h *holdGetMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		h.gets.Add(1)
		<-r.Context().Done()
		return
	}
	h.fakeMCP.ServeHTTP(w, r)
}

// sdkSteps runs testdata/peers/mcphttpclient.mjs (the TypeScript SDK's
// StreamableHTTPClientTransport) with steps against url.
func sdkSteps(t *testing.T, url, steps string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	sdk := filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if err == nil {
		_, err = os.Stat(sdk)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or the TypeScript SDK is missing (%v): run 'make peers'", err)
		}
		t.Skipf("node or the TypeScript SDK is missing (%v)", err)
	}
	script := filepath.Join(testrepo.Root(t), "testdata", "peers", "mcphttpclient.mjs")
	out, err := exec.Command(node, script, url, "streamable", steps).Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	return string(out)
}

// endOf returns the session_end of an event log ("" reason: none yet).
func endOf(t *testing.T, data []byte) (reason, failure string) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var e struct {
		Kind string `json:"kind"`
		End  struct {
			Reason  string `json:"reason"`
			Failure string `json:"failure"`
		} `json:"end"`
	}
	if json.Unmarshal(lines[len(lines)-1], &e) != nil || e.Kind != "session_end" {
		return "", ""
	}
	return e.End.Reason, e.End.Failure
}

// TestSDKClientHangsUpGetStream: the TypeScript SDK client opens its GET
// stream, which the upstream has not answered yet when the client ends
// the session (DELETE) and closes: the cassette records that the client
// closed the stream, and neither the proxy's log nor the session's, nor
// the log re-derived from the cassette, records a failure. They verify.
func TestSDKClientHangsUpGetStream(t *testing.T) {
	up := &holdGetMCP{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	s := startProxy(t, srv.URL, Options{})
	keepOnFailure(t, s.Dir)
	out := sdkSteps(t, s.URL+"/mcp", "tools,close")
	if strings.Contains(out, `"error":{"code"`) {
		t.Fatalf("the client failed:\n%s", out)
	}
	res, err := s.stop()
	if err != nil || res.Failure != "" {
		t.Fatalf("err %v, failure %q", err, res.Failure)
	}
	if up.gets.Load() == 0 {
		t.Fatal("the client opened no GET stream")
	}
	_, xs, _ := s.cassette()
	closed := 0
	for _, x := range xs {
		if x.Request.Method == http.MethodGet {
			if x.Response != nil || x.Error != detailClosedBeforeAnswer || x.Status != 0 {
				t.Errorf("GET exchange %d: response %v, error %q, status %d; want the client's close before the answer", x.X, x.Response != nil, x.Error, x.Status)
			}
			closed++
		}
	}
	if closed == 0 {
		t.Error("no GET stream in the cassette")
	}
	rep, live := s.verifyEvents()
	if ok, why := verified(rep); !ok {
		t.Errorf("the proxy's log: %s", why)
	}
	if _, f := endOf(t, rederive(t, s, logEvents(t, live))); f != "" {
		t.Errorf("the log re-derived from the cassette records the failure %q", f)
	}
	_, srep := sessionEvents(t, s.Dir, 1)
	if ok, why := verified(srep); !ok {
		t.Errorf("the session's log: %s", why)
	}
}

// TestSDKSessionEndsOnDelete: an MCP session the TypeScript SDK client
// ends (terminateSession: DELETE) against server-everything has its log
// ended, signed and on disk while the proxy still runs, and it verifies;
// stopping the proxy later writes nothing more into it (exactly once).
func TestSDKSessionEndsOnDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers")
	}
	up := startEverything(t, "streamableHttp")
	s := startProxy(t, up, Options{})
	keepOnFailure(t, s.Dir)
	out := sdkSteps(t, s.URL+"/mcp", "tools,echo,close")
	if strings.Contains(out, `"error":{"code"`) {
		t.Fatalf("the client failed:\n%s", out)
	}
	path := filepath.Join(s.Dir, MCPDir, "1", derive.EventsFile)
	var data []byte
	reason := ""
	for deadline := time.Now().Add(20 * time.Second); reason == "" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		data, _ = os.ReadFile(path)
		if len(data) > 0 {
			reason, _ = endOf(t, data)
		}
	}
	select {
	case <-s.done:
		t.Fatal("the proxy stopped")
	default:
	}
	if !strings.Contains(reason, "the client ended the MCP session with DELETE") {
		t.Fatalf("while the proxy runs, the session's log has no end naming the DELETE (reason %q):\n%s", reason, data)
	}
	_, rep := sessionEvents(t, s.Dir, 1)
	if ok, why := verified(rep); !ok {
		t.Errorf("the session's log, the proxy running: %s", why)
	}
	cas, err := os.ReadFile(filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.stop()
	if err != nil || res.Failure != "" || res.MCPSessions != 1 {
		t.Fatalf("err %v, %+v", err, res)
	}
	after, _ := os.ReadFile(path)
	casAfter, _ := os.ReadFile(filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile))
	if !bytes.Equal(after, data) || !bytes.Equal(casAfter, cas) {
		t.Errorf("stopping the proxy changed the ended session's files (log %d -> %d bytes, cassette %d -> %d)", len(data), len(after), len(cas), len(casAfter))
	}
	if n := bytes.Count(after, []byte(`"kind":"session_end"`)); n != 1 {
		t.Errorf("%d session_end events, want 1", n)
	}
	prep, _ := s.verifyEvents()
	if ok, why := verified(prep); !ok {
		t.Errorf("the proxy's log: %s", why)
	}
}

// TestSessionAfterEnd: a request that carries the id of a session whose
// log was ended (after its DELETE) is forwarded and recorded in the HTTP
// cassette, and named in the proxy's log (witness/mcp-after-end), not
// written into the ended log; a GET stream open at the DELETE holds the
// end back until it is over.
func TestSessionAfterEnd(t *testing.T) {
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
	del, _ := http.NewRequest(http.MethodDelete, s.URL+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", sid)
	dr, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	path := filepath.Join(s.Dir, MCPDir, "1", derive.EventsFile)
	time.Sleep(200 * time.Millisecond)
	if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(`"kind":"session_end"`)) {
		t.Fatal("the session's log was ended while its GET stream was open")
	}
	gr.Body.Close() // the last exchange of the session
	var data []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if data, _ = os.ReadFile(path); bytes.Contains(data, []byte(`"kind":"session_end"`)) {
			break
		}
	}
	if r, _ := endOf(t, data); !strings.Contains(r, "DELETE") {
		t.Fatalf("no end naming the DELETE once the GET stream closed: %q", r)
	}
	if r, _ := mcpCall(t, s.URL+"/mcp", sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); r.StatusCode != 200 {
		t.Errorf("after the end: %d", r.StatusCode)
	}
	res, err := s.stop()
	if err != nil || res.Failure != "" {
		t.Fatalf("err %v, failure %q", err, res.Failure)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("the ended log changed")
	}
	rep, main := s.verifyEvents()
	if ok, why := verified(rep); !ok {
		t.Error(why)
	}
	if !bytes.Contains(main, []byte(`"method":"witness/mcp-after-end","payload":{"dir":"mcp/1","exchange":4,"method":"POST","session":1}`)) {
		t.Errorf("the proxy's log does not name the exchange after the end:\n%s", main)
	}
	// no session log holds that exchange: the proxy's log is not verified
	key, _ := hex.DecodeString(testKeyHex)
	r, err := verify.Run(verify.Options{EventsFile: filepath.Join(s.Dir, derive.EventsFile), EndVerifier: hmacVerifier{key}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code() != exitcode.Incomplete || !hasCode(r, "mcp-after-end") {
		t.Errorf("verify of the proxy's log says %s (exit %d), want incomplete with mcp-after-end: %+v", r.Verdict, r.Code(), r.Findings)
	}
	_, xs, _ := s.cassette()
	if len(xs) != 4 || xs[3].Response == nil || xs[3].Response.Status != 200 {
		t.Errorf("the HTTP cassette holds %d exchanges; want the 4th answered", len(xs))
	}
}
