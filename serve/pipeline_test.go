package serve

import (
	"bufio"
	"context"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/proxy"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	pInit   = `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`
	pInited = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	pCall   = `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2},"_meta":{"progressToken":%s}}}`
)

func fill(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}

// pipelinedCassette is what a proxy records between a host that pipelines
// (initialize, initialized and tools/call sent before any answer) and a
// server that answers initialize, reports progress on the call, announces
// a tool list change on initialized, then answers the call.
func pipelinedCassette(t *testing.T) string {
	return writeCassette(t,
		"c2s "+fill(pInit, "1"),
		"c2s "+pInited,
		"c2s "+fill(pCall, "2", `"rec-token"`),
		`s2c {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}`,
		`s2c {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"rec-token","progress":1,"total":2}}`,
		`s2c {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`s2c {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2,"total":2,"progressToken":"rec-token"}}`,
		`s2c {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}`,
	)
}

// TestServePipeliningHostOrder: a host that pipelines gets each recorded
// notification in the turn it belongs to: list_changed after initialized,
// the progress notifications in the turn of the tools/call whose token
// they carry (with the host's token, not the recorded one), then the
// answer.
func TestServePipeliningHostOrder(t *testing.T) {
	cas := pipelinedCassette(t)
	got, stderr, res, err := serveSession(t, cas, []step{
		{fill(pInit, `"a"`) + "\n" + pInited + "\n" + fill(pCall, `"b"`, `7`), 0},
	})
	if err != nil || res.Served != 2 {
		t.Fatalf("err %v, result %+v\n%s", err, res, stderr)
	}
	want := `{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":2}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2,"total":2,"progressToken":7}}
{"jsonrpc":"2.0","id":"b","result":{"content":[{"type":"text","text":"done"}]}}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestServeNotificationNotEarly: a host that waits for each answer, and
// probes with a ping after initialize, gets the ping's answer next, not a
// progress notification of a call it has not made yet; after initialized
// the list_changed comes before the answer to the next ping, not held
// back to the tools/call.
func TestServeNotificationNotEarly(t *testing.T) {
	cas := pipelinedCassette(t)
	got, stderr, _, err := serveSession(t, cas, []step{
		{fill(pInit, "1"), 1},
		{`{"jsonrpc":"2.0","id":90,"method":"ping"}`, 1},
		{pInited, 0},
		{`{"jsonrpc":"2.0","id":91,"method":"ping"}`, 2},
		{fill(pCall, "2", `"host-token"`), 3},
	})
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	l := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	want := []string{`"id":1,"result"`, `"id":90,"result":{}`, `notifications/tools/list_changed`, `"id":91,"result":{}`,
		`"progressToken":"host-token","progress":1`, `"progressToken":"host-token"}`, `"id":2,"result"`}
	if len(l) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(l), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(l[i], w) {
			t.Errorf("line %d: %s, want it to contain %s", i+1, l[i], w)
		}
	}
	if strings.Contains(got, "rec-token") {
		t.Errorf("the recorded progress token reached the host:\n%s", got)
	}
}

// TestServeProgressWithoutHostToken: a host that sends no progressToken
// asked for no progress: the recorded notifications are not sent.
func TestServeProgressWithoutHostToken(t *testing.T) {
	cas := pipelinedCassette(t)
	noToken := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2}}}`
	got, stderr, _, err := serveSession(t, cas, []step{{fill(pInit, "1"), 1}, {pInited, 1}, {noToken, 1}})
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	if strings.Contains(got, "notifications/progress") || !strings.Contains(stderr, "has no progressToken") {
		t.Errorf("got\n%s\nstderr\n%s", got, stderr)
	}
}

// TestServeMetaInArgumentsIsData: only params._meta is volatile; a _meta
// inside a tool's arguments is the tool's data and must match.
func TestServeMetaInArgumentsIsData(t *testing.T) {
	cas := writeCassette(t,
		`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tag","arguments":{"_meta":{"label":"red"}},"_meta":{"traceparent":"00-aa-bb-01"}}}`,
		`s2c {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"tagged red"}]}}`,
	)
	// another params._meta (volatile) and the same arguments: served
	same := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tag","arguments":{"_meta":{"label":"red"}},"_meta":{"progressToken":"x"}}}`
	got, stderr, res, err := serveSession(t, cas, []step{{same, 1}})
	if err != nil || res.Served != 1 || !strings.Contains(got, "tagged red") {
		t.Fatalf("err %v result %+v got %s\n%s", err, res, got, stderr)
	}
	// another _meta inside the arguments: a miss, with the diff showing it
	other := `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"tag","arguments":{"_meta":{"label":"blue"}}}}`
	got, stderr, res, err = serveSession(t, cas, []step{{other, 1}})
	if exitcode.Of(err) != exitcode.Incomplete || res.Misses != 1 || strings.Contains(got, "tagged red") {
		t.Fatalf("err %v result %+v got %s", err, res, got)
	}
	for _, w := range []string{`-         "label": "red"`, `+         "label": "blue"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// TestServePipelinedRecordingEndToEnd records a pipelining host against
// server-everything (initialize, initialized and a long-running tool call
// with a progressToken sent at once), then serves the cassette to a host
// that waits for each answer and probes with a ping after initialize: the
// ping's answer comes before any progress, and the progress notifications
// carry the host's token.
func TestServePipelinedRecordingEndToEnd(t *testing.T) {
	command := everything(t)
	dir := filepath.Join(t.TempDir(), "rec")
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := proxy.Run(context.Background(), proxy.Options{OutDir: dir, Command: command,
			Env: []string{"PATH=" + os.Getenv("PATH")}, Stdin: hostW, Stdout: hostR, KillGrace: 3 * time.Second,
			Getenv: func(k string) string {
				if k == eventlog.EnvTS {
					return "2026-08-30T14:33:00+00:00"
				}
				return ""
			}})
		hostR.Close()
		done <- err
	}()
	call := `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.2,"steps":2},"_meta":{"progressToken":%s}}}`
	if _, err := io.WriteString(proxyIn, fill(pInit, "1")+"\n"+pInited+"\n"+fill(call, "2", `"rec-token"`)+"\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(proxyOut)
	var live []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("live: %v after %q", err, live)
		}
		live = append(live, l)
		if m, perr := mcp.Parse([]byte(strings.TrimSpace(l))); perr == nil && m.Kind == mcp.KindResponse && string(m.ID) == "2" {
			break
		}
	}
	proxyIn.Close()
	io.Copy(io.Discard, br)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hostW.Close()
	if n := strings.Count(strings.Join(live, ""), `"rec-token"`); n != 2 {
		t.Fatalf("the live session has %d progress notifications, want 2:\n%s", n, strings.Join(live, ""))
	}
	sc, err := LoadFile(filepath.Join(dir, derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	srvIn, w := io.Pipe()
	r, srvOut := io.Pipe()
	var stderr strings.Builder
	type ret struct {
		res *Result
		err error
	}
	served := make(chan ret, 1)
	go func() {
		res, err := sc.Serve(Options{Stdin: srvIn, Stdout: srvOut, Stderr: &stderr})
		srvOut.Close()
		served <- ret{res, err}
	}()
	h := &answeringHost{t: t, w: w, r: bufio.NewReader(r), answer: answersAs(""), resp: map[string]string{}}
	var got strings.Builder
	readUntil := func(id string) {
		for {
			l, err := h.r.ReadString('\n')
			got.WriteString(l)
			if err != nil {
				t.Fatalf("waiting for id %s: %v\n%s", id, err, got.String())
			}
			if m, perr := mcp.Parse([]byte(strings.TrimSpace(l))); perr == nil && m.Kind == mcp.KindResponse && string(m.ID) == id {
				return
			}
		}
	}
	h.write(fill(pInit, "1"))
	readUntil("1")
	h.write(`{"jsonrpc":"2.0","id":90,"method":"ping"}`)
	next, _ := h.r.ReadString('\n')
	got.WriteString(next)
	if !strings.Contains(next, `"id":90,"result":{}`) {
		t.Errorf("the line after the ping that follows initialize is not its answer: %s", next)
	}
	h.write(pInited)
	h.write(fill(call, "2", `"host-token"`))
	readUntil("2")
	w.Close()
	io.Copy(io.Discard, h.r)
	rr := <-served
	if rr.err != nil || rr.res.Served != 2 {
		t.Fatalf("serve: %v, result %+v\n%s", rr.err, rr.res, stderr.String())
	}
	out := got.String()
	if strings.Count(out, `"progressToken":"host-token"`) != 2 || strings.Contains(out, "rec-token") {
		t.Errorf("progress notifications not with the host's token:\n%s", out)
	}
	if p, r := strings.Index(out, `"progressToken":"host-token"`), strings.LastIndex(out, `"id":2}`); p < 0 || r < p {
		t.Errorf("the call's answer comes before its progress:\n%s", out)
	}
}

// FuzzWithToken: splicing a progress token into a line never panics, and
// when it succeeds the result is the line with params.progressToken set to
// the token and every other member unchanged.
func FuzzWithToken(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"rec","progress":1}}`), []byte(`7`))
	f.Add([]byte(`{"params" : { "a":{"progressToken":1}, "progressToken" : 2 } , "method":"x"}`), []byte(`"h"`))
	f.Add([]byte(`{"params":[1]}`), []byte(`1`))
	f.Fuzz(func(t *testing.T, line, tok []byte) {
		if m, err := mcp.Parse(line); err != nil || m.Kind != mcp.KindNotification {
			return
		}
		if _, err := mcp.Parse([]byte(`{"jsonrpc":"2.0","id":` + string(tok) + `,"result":{}}`)); err != nil {
			return // only a valid id-like token (string or number) is ever spliced
		}
		out, ok := withToken(line, tok)
		if !ok {
			return
		}
		m, err := mcp.Parse(out)
		if err != nil {
			t.Fatalf("spliced line does not parse: %v\n%s", err, out)
		}
		got, _ := progressTokenOf(m.Params)
		if got != string(tok) {
			t.Fatalf("token %s, want %s\n%s", got, tok, out)
		}
	})
}
