package proxy

import (
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/serve"
)

var (
	gosdkOnce sync.Once
	gosdkBin  string
	gosdkErr  error
)

// gosdk returns the command of testdata/servers/gosdk, built on first use.
func gosdk(t *testing.T) []string {
	t.Helper()
	gosdkOnce.Do(func() {
		dir, err := os.MkdirTemp("", "witness-proxy-gosdk")
		if err != nil {
			gosdkErr = err
			return
		}
		gosdkBin = filepath.Join(dir, "gosdk")
		if out, err := exec.Command("go", "build", "-o", gosdkBin, "../testdata/servers/gosdk").CombinedOutput(); err != nil {
			gosdkErr = err
			t.Logf("%s", out)
		}
	})
	if gosdkErr != nil {
		t.Fatalf("build the Go SDK server: %v", gosdkErr)
	}
	return []string{gosdkBin}
}

// gosdkSession: handshake, every page of tools/list, four calls (one
// isError, one destructive, one that makes the server send
// notifications/tools/list_changed), a ping.
func gosdkSession(h *rpcHost) {
	h.call("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"witness-test-host","version":"0.0.1"}}}`)
	h.write(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	cursor := ""
	for i := 2; i < 9; i++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + quoteJSON(cursor) + `}`
		}
		id := string(rune('0' + i))
		l := h.call(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list","params":`+params+`}`)
		m, _ := mcp.Parse([]byte(strings.TrimSpace(l)))
		var res struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(m.Result, &res)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	h.call(`"g"`, `{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"greet","arguments":{"name":"witness"}}}`)
	h.call("10", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"fail","arguments":{"why":"test"}}}`)
	h.call("11", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"delete_file","arguments":{"path":"/tmp/x"}}}`)
	h.call("12", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"add_tool","arguments":{}}}`)
	h.call("13", `{"jsonrpc":"2.0","id":13,"method":"ping"}`)
	h.finish()
}

// runServed runs the session against `witness serve` (the library) on the
// cassette.
func runServed(t *testing.T, cas string, session func(*rpcHost)) (*rpcHost, *serve.Result, string) {
	t.Helper()
	s, err := serve.LoadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	hostW, srvIn := io.Pipe()
	srvOut, hostR := io.Pipe()
	var stderr strings.Builder
	type ret struct {
		res *serve.Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := s.Serve(serve.Options{Stdin: hostW, Stdout: hostR, Stderr: &stderr})
		hostR.Close()
		done <- ret{res, err}
	}()
	h := newRPCHost(t, srvIn, srvOut)
	session(h)
	r := <-done
	if r.err != nil {
		t.Fatalf("serve: %v\n%s", r.err, stderr.String())
	}
	return h, r.res, stderr.String()
}

func sameSession(t *testing.T, live, served *rpcHost) {
	t.Helper()
	for id, want := range live.resp {
		if got := served.resp[id]; got != want {
			t.Errorf("response %s: live %q, served %q", id, want, got)
		}
	}
	if len(served.resp) != len(live.resp) {
		t.Errorf("%d responses served, %d live", len(served.resp), len(live.resp))
	}
	a, b := append([]string(nil), live.note...), append([]string(nil), served.note...)
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, "") != strings.Join(b, "") {
		t.Errorf("notifications: live %q, served %q", a, b)
	}
}

// TestServeReplaysPeers records a session with each real peer through the
// proxy, serves the cassette and drives the same session: the same
// responses and notifications come back, and the events derived from a
// recording of the served session equal the live ones but for the header's
// command.
func TestServeReplaysPeers(t *testing.T) {
	for _, c := range []struct {
		name    string
		command func(*testing.T) []string
		session func(*rpcHost)
	}{
		{"gosdk", gosdk, gosdkSession},
		{"server-everything", everything, everythingSession},
	} {
		t.Run(c.name, func(t *testing.T) {
			command := c.command(t)
			live, rec := runProxied(t, command, c.session)
			served, res, stderr := runServed(t, rec.Cassette, c.session)
			sameSession(t, live, served)
			if res.Misses != 0 || res.Unused != 0 {
				t.Errorf("serve result %+v\n%s", res, stderr)
			}
			// the served session, recorded through the proxy, gives the same events
			_, again := runProxiedEnv(t, []string{os.Args[0]}, append(os.Environ(), envServe+"="+rec.Cassette), c.session)
			evLive := readEvents(t, rec.Events)
			evServed := readEvents(t, again.Events)
			if len(evLive) != len(evServed) {
				t.Fatalf("%d events live, %d from the served session", len(evLive), len(evServed))
			}
			// The interleaving of host and server lines is timing (a server
			// notification may be read before or after the host's next
			// request), so each direction is compared in its own order, and
			// links by the event they name, not by its position.
			calls := 0
			liveDirs, servedDirs := byDirection(evLive), byDirection(evServed)
			for _, dir := range []string{"c2s", "s2c", ""} {
				la, lb := liveDirs[dir], servedDirs[dir]
				if len(la) != len(lb) {
					t.Errorf("%s: %d events live, %d served", dir, len(la), len(lb))
					continue
				}
				for i := range la {
					a, b := la[i], lb[i]
					if a.Kind == "tool_call" {
						calls++
					}
					if a.Kind == "session_start" {
						sa, sb := a.Header.Server, b.Header.Server
						if sa.Name != sb.Name || sa.ProtocolVersion != sb.ProtocolVersion || sa.ToolsSHA256 != sb.ToolsSHA256 {
							t.Errorf("headers: live %+v, served %+v", sa, sb)
						}
						continue
					}
					if a.Kind != b.Kind || a.Tool != b.Tool || a.Method != b.Method || string(a.RPCID) != string(b.RPCID) ||
						a.PayloadSHA256 != b.PayloadSHA256 || linked(evLive, a.Call) != linked(evServed, b.Call) || boolOf(a.IsError) != boolOf(b.IsError) {
						t.Errorf("%s event %d: live %s %s %s %s, served %s %s %s %s", dir, i, a.Kind, a.Tool, a.RPCID, a.PayloadSHA256, b.Kind, b.Tool, b.RPCID, b.PayloadSHA256)
					}
				}
			}
			if calls < 3 {
				t.Errorf("only %d tool calls recorded", calls)
			}
		})
	}
}

// byDirection splits a log by the direction of each event's wire message
// ("" for the session lines and the witness's own), keeping log order.
func byDirection(evs []*eventlog.Event) map[string][]*eventlog.Event {
	m := map[string][]*eventlog.Event{}
	for _, e := range evs {
		d := e.Direction
		switch {
		case d != "":
		case e.Kind == eventlog.KindToolCall:
			d = "c2s"
		case e.Kind == eventlog.KindToolResponse || e.Kind == eventlog.KindNotification || e.Kind == eventlog.KindExternalEffect:
			d = "s2c"
		}
		m[d] = append(m[d], e)
	}
	return m
}

// linked names the event a link points at by its kind, method and id
// token (positions differ between two runs).
func linked(evs []*eventlog.Event, id string) string {
	if id == "" {
		return ""
	}
	for _, e := range evs {
		if e.ID == id {
			return string(e.Kind) + " " + e.Method + " " + string(e.RPCID)
		}
	}
	return "missing " + id
}

// envServe makes the test binary act as `witness serve --cassette $envServe`
// (see TestMain), so that a served session can itself run behind the proxy.
const envServe = "WITNESS_PROXY_TEST_SERVE"

// serveMain is the test binary's serve mode.
func serveMain(cas string) int {
	s, err := serve.LoadFile(cas)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	if _, err := s.Serve(serve.Options{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	return 0
}

func boolOf(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}
