package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const frozenTS = "2026-08-30T14:33:00+00:00"

func frozenEnv(k string) string {
	if k == eventlog.EnvTS {
		return frozenTS
	}
	return ""
}

// host is a scripted MCP host talking to a proxy over pipes; it keeps every
// byte it sent and received.
type host struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Reader
	sent bytes.Buffer
	got  bytes.Buffer
}

func (h *host) send(line string) {
	h.t.Helper()
	h.sent.WriteString(line + "\n")
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		h.t.Fatalf("host write: %v", err)
	}
}

func (h *host) recv() string {
	h.t.Helper()
	line, err := h.r.ReadString('\n')
	h.got.WriteString(line)
	if err != nil {
		h.t.Fatalf("host read: %v (got %q)", err, line)
	}
	return line
}

func (h *host) close() {
	h.w.Close()
	rest, _ := io.ReadAll(h.r)
	h.got.Write(rest)
}

// runRecorded runs Run with a scripted host and returns the host and result.
func runRecorded(t *testing.T, o Options, script func(h *host)) (*host, *Result, error) {
	t.Helper()
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	o.Stdin, o.Stdout = hostW, hostR
	if o.OutDir == "" {
		o.OutDir = filepath.Join(t.TempDir(), "rec")
	}
	if o.Getenv == nil {
		o.Getenv = frozenEnv
	}
	pid := 0
	o.Started = func(p int) { pid = p }
	defer func() {
		if pid != 0 && groupAlive(pid) {
			t.Errorf("process group %d survived the proxy", pid)
		}
	}()
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := Run(context.Background(), o)
		hostR.Close()
		done <- ret{res, err}
	}()
	h := &host{t: t, w: proxyIn, r: bufio.NewReader(proxyOut)}
	script(h)
	h.close()
	r := <-done
	hostW.Close()
	return h, r.res, r.err
}

func readCassette(t *testing.T, path string) (c2s, s2c string, recs []*cassette.Record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := cassette.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var a, b strings.Builder
	for {
		rec, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		switch rec.Dir {
		case cassette.C2S:
			a.Write(rec.Wire())
		case cassette.S2C:
			b.Write(rec.Wire())
		}
	}
	return a.String(), b.String(), recs
}

func readEvents(t *testing.T, path string) []*eventlog.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := eventlog.NewReader(f, path)
	var evs []*eventlog.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// collidingSession drives the echo server (-notify -ask) so that the host's
// request id 0 and the server's request id 0 are open at the same time.
func collidingSession(h *host) {
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"0"}}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.recv() // list_changed
	h.recv() // roots/list, id 0, left open for now
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":"3","method":"tools/list","params":{"cursor":"page-2"}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`) // answers the server's id 0
	h.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_note","arguments":{"name":"n1"},"_meta":{"progressToken":7}}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fail","arguments":{}}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	h.recv()
}

func TestRecordedSession(t *testing.T) {
	fx := filepath.Join(t.TempDir(), "fx.json")
	os.WriteFile(fx, []byte(`{"format":"witness-effects","v":1,"effects":[{"tool":"echo","op":"send","target":"$.text"}]}`), 0o644)
	var stderr bytes.Buffer
	h, res, err := runRecorded(t, Options{Command: []string{echo(t), "-notify", "-ask", "-banner"}, EffectsPath: fx, Stderr: &stderr}, collidingSession)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	c2s, s2c, recs := readCassette(t, res.Cassette)
	if c2s != h.sent.String() {
		t.Errorf("cassette c2s != bytes the host sent:\n%q\n%q", c2s, h.sent.String())
	}
	if s2c != h.got.String() {
		t.Errorf("cassette s2c != bytes the host received:\n%q\n%q", s2c, h.got.String())
	}
	var lives []string
	for _, r := range recs {
		if r.Life != "" {
			lives = append(lives, r.Life)
		}
	}
	if lives[0] != cassette.LifeSpawn || lives[len(lives)-1] != cassette.LifeExit {
		t.Errorf("lifecycle %v", lives)
	}
	if !strings.Contains(stderr.String(), "echo server: ready") {
		t.Errorf("server stderr not passed through: %q", stderr.String())
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("unexpected warnings: %s", stderr.String())
	}

	evs := readEvents(t, res.Events)
	var kinds []string
	for _, e := range evs {
		k := string(e.Kind)
		if e.Method != "" && e.Kind != eventlog.KindToolCall {
			k += "(" + e.Method + ")"
		}
		if e.Tool != "" {
			k += "[" + e.Tool + "]"
		}
		kinds = append(kinds, k)
	}
	want := []string{"session_start", "mcp_request(initialize)", "mcp_response(initialize)", "notification(notifications/initialized)",
		"notification(notifications/tools/list_changed)", "mcp_request(roots/list)",
		"mcp_request(tools/list)", "mcp_response(tools/list)", "mcp_request(tools/list)", "mcp_response(tools/list)",
		"tool_call[echo]", "tool_response[echo]", "external_effect[echo]", "mcp_response(roots/list)",
		"tool_call[delete_note]", "tool_response[delete_note]", "external_effect[delete_note]",
		"tool_call[fail]", "tool_response[fail]",
		"tool_call[nope]", "tool_response[nope]", "session_end"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n got %v\nwant %v", kinds, want)
	}
	hd := evs[0].Header.Server
	if hd.Name != "witness-echo" || hd.ProtocolVersion != "2025-06-18" || len(hd.Tools) != 4 || hd.ToolsSHA256 == "" {
		t.Errorf("header server %+v", hd)
	}
	byID := map[string]*eventlog.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	for _, e := range evs {
		switch e.Kind {
		case eventlog.KindToolResponse, eventlog.KindExternalEffect:
			c := byID[e.Call]
			if c == nil || c.Kind != eventlog.KindToolCall || c.Tool != e.Tool {
				t.Errorf("%s %s names call %q", e.Kind, e.ID, e.Call)
			}
			if e.Kind == eventlog.KindToolResponse && string(c.RPCID) != string(e.RPCID) {
				t.Errorf("response %s id %s paired with call id %s", e.ID, e.RPCID, c.RPCID)
			}
		}
	}
	if string(evs[10].RPCID) != "0" || string(evs[5].RPCID) != "0" || evs[5].Direction != eventlog.DirS2C {
		t.Errorf("ids: call %s server request %s", evs[10].RPCID, evs[5].RPCID)
	}
	// the host's answer id 0 pairs with the server's request id 0, not
	// with the host's own tools/call id 0
	if r := evs[13]; r.Call != evs[5].ID || r.Direction != eventlog.DirC2S || string(r.Payload) != `{"roots":[]}` {
		t.Errorf("roots answer %+v", r)
	}
	if eff := evs[12].Effect; eff.Op != "send" || eff.Target != "hi" {
		t.Errorf("mapped effect %+v", eff)
	}
	if eff := evs[16].Effect; eff.Op != "write" || !strings.Contains(eff.Reason, "destructiveHint") {
		t.Errorf("annotation effect %+v", eff)
	}
	if r := evs[18]; r.IsError == nil || !*r.IsError || r.RPCError {
		t.Errorf("isError result: %+v", r)
	}
	if r := evs[20]; !r.RPCError || r.IsError == nil || !*r.IsError {
		t.Errorf("rpc error: %+v", r)
	}
	var args map[string]any
	json.Unmarshal(evs[14].Payload, &args)
	if args["name"] != "n1" {
		t.Errorf("call payload %s", evs[14].Payload)
	}
	end := evs[len(evs)-1].End
	if end.Count != int64(len(evs)-1) || !strings.Contains(end.Reason, "status 0") {
		t.Errorf("end %+v", end)
	}
	rep, err := eventlog.VerifyLog(bytes.NewReader(mustRead(t, res.Events)), res.Events, eventlog.VerifyLogOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() != nil {
		t.Errorf("verify log: %v", rep.Err())
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordedSessionDeterministic records the same session 10 times with
// ATW_WITNESS_TS frozen and compares the bytes of the logs and cassettes.
func TestRecordedSessionDeterministic(t *testing.T) {
	var first []byte
	var firstCas []byte
	for i := 0; i < 10; i++ {
		_, res, err := runRecorded(t, Options{Command: []string{echo(t), "-notify", "-ask"}, Env: []string{"PATH=/usr/bin"}}, collidingSession)
		if err != nil {
			t.Fatal(err)
		}
		ev, cas := mustRead(t, res.Events), mustRead(t, res.Cassette)
		if i == 0 {
			first, firstCas = ev, cas
			continue
		}
		if !bytes.Equal(ev, first) {
			t.Fatalf("run %d: event log differs", i)
		}
		if !bytes.Equal(cas, firstCas) {
			os.WriteFile("/tmp/cas0", firstCas, 0o644)
			os.WriteFile("/tmp/cas1", cas, 0o644)
			t.Fatalf("run %d: cassette differs", i)
		}
	}
}

func TestUnansweredCall(t *testing.T) {
	fx := filepath.Join(t.TempDir(), "fx.json")
	os.WriteFile(fx, []byte(`{"format":"witness-effects","v":1,"effects":[{"tool":"hang","op":"exec","target":"$.cmd"}]}`), 0o644)
	_, res, err := runRecorded(t, Options{Command: []string{echo(t)}, EffectsPath: fx}, func(h *host) {
		h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang","arguments":{"cmd":"rm -rf /tmp/x"}}}`)
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, res.Events)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	// no response, so no effect is claimed; the end says the call is open
	want := "session_start tool_call session_end"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("events %v, want %s", kinds, want)
	}
	if r := evs[2].End.Reason; !strings.Contains(r, "1 tool call(s) without a response") || !strings.Contains(r, "exit status 0") {
		t.Errorf("end reason %q", r)
	}
}

func TestRunRefusesExistingRecording(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, derive.CassetteFile), []byte("x"), 0o644)
	_, err := Run(context.Background(), Options{OutDir: dir, Command: []string{echo(t)}})
	if err == nil || !strings.Contains(err.Error(), "evidence is never overwritten") || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("err %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, derive.CassetteFile)); string(data) != "x" {
		t.Errorf("existing cassette changed: %q", data)
	}
}

// TestEventsRederiveFromCassette: the event log the proxy wrote equals, byte
// for byte, the log derive.EventsFromCassette derives from its cassette.
func TestEventsRederiveFromCassette(t *testing.T) {
	_, res, err := runRecorded(t, Options{Command: []string{echo(t), "-notify", "-ask"}}, collidingSession)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	f, err := os.Open(res.Cassette)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := derive.EventsFromCassette(f, res.Cassette, &again, derive.Options{Cassette: derive.CassetteFile}); err != nil {
		t.Fatal(err)
	}
	if live := mustRead(t, res.Events); !bytes.Equal(live, again.Bytes()) {
		t.Errorf("re-derived log differs:\nlive\n%s\nagain\n%s", live, again.Bytes())
	}
}

// TestRedactedRecording: redaction changes what is written, never what is
// forwarded.
func TestRedactedRecording(t *testing.T) {
	red, err := derive.LoadRedactor(derive.RedactOptions{Rules: []string{"re:s3cr3t-[0-9]+"}, KeyHex: strings.Repeat("ab", 32)})
	if err != nil || red == nil {
		t.Fatalf("redactor: %v", err)
	}
	h, res, err := runRecorded(t, Options{Command: []string{echo(t)}, Redactor: red}, func(h *host) {
		h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"s3cr3t-42"}}}`)
		h.recv()
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.got.String(), "s3cr3t-42") {
		t.Errorf("the host did not get the real bytes: %q", h.got.String())
	}
	for _, p := range []string{res.Cassette, res.Events} {
		b := mustRead(t, p)
		if bytes.Contains(b, []byte("s3cr3t-42")) {
			t.Errorf("%s holds the secret", filepath.Base(p))
		}
		if !bytes.Contains(b, []byte("redact")) {
			t.Errorf("%s does not say it was redacted", filepath.Base(p))
		}
	}
}

// TestPipelinedHostHeaderHasTools: a host that sends everything at once
// (tools/call before the tools/list answer has arrived) still gets the
// server's identity and tool list in the session header.
func TestPipelinedHostHeaderHasTools(t *testing.T) {
	_, res, err := runRecorded(t, Options{Command: []string{echo(t)}}, func(h *host) {
		h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"page-2"}}` + "\n" +
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_note","arguments":{"name":"n"}}}`)
		for i := 0; i < 4; i++ {
			h.recv()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, res.Events)
	srv := evs[0].Header.Server
	if srv.Name != "witness-echo" || len(srv.Tools) != 4 {
		t.Errorf("header server %+v", srv)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	if want := "session_start mcp_request notification mcp_request mcp_request tool_call mcp_response mcp_response mcp_response tool_response external_effect session_end"; strings.Join(kinds, " ") != want {
		t.Errorf("events %v, want %s", kinds, want)
	}
}
