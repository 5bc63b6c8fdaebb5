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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// everything returns the command of the pinned server-everything.
func everything(t *testing.T) []string {
	t.Helper()
	script, _ := filepath.Abs("../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); serr != nil || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peers missing (%v %v): run 'make peers'", serr, err)
		}
		t.Skip("npm peers missing: run 'make peers'")
	}
	return []string{node, script, "stdio"}
}

// answeringHost is a host that answers the server's requests: it sends
// each of its requests and reads until the response, answering every
// server request on the way with answer(method).
type answeringHost struct {
	t      *testing.T
	w      io.WriteCloser
	r      *bufio.Reader
	answer func(method string) string // the result (or "error:" + error object) for a server request
	resp   map[string]string          // exact id token -> response line
	asked  []string                   // methods of the server's requests, in order
}

func (h *answeringHost) write(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		h.t.Fatalf("host write: %v", err)
	}
}

func (h *answeringHost) call(id, line string) string {
	h.t.Helper()
	h.write(line)
	for {
		l, err := h.r.ReadString('\n')
		if err != nil {
			h.t.Fatalf("waiting for id %s: %v", id, err)
		}
		l = strings.TrimSuffix(l, "\n")
		m, perr := mcp.Parse([]byte(l))
		if perr != nil {
			h.t.Fatalf("a line that is not JSON-RPC: %q", l)
		}
		switch m.Kind {
		case mcp.KindResponse:
			h.resp[string(m.ID)] = l
			if string(m.ID) == id {
				return l
			}
		case mcp.KindRequest:
			h.asked = append(h.asked, m.Method)
			a := h.answer(m.Method)
			if e, ok := strings.CutPrefix(a, "error:"); ok {
				h.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":` + e + `}`)
			} else {
				h.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + a + `}`)
			}
		}
	}
}

// elicitSession: handshake declaring sampling and elicitation, the tool
// list, then the elicitation tool and the sampling tool, each making the
// server ask the host something before it answers.
func elicitSession(h *answeringHost) {
	h.call("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"witness-test-host","version":"0.0.1"}}}`)
	h.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.call("2", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	h.call("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}`)
	h.call("4", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"say hi","maxTokens":5}}}`)
	h.w.Close()
	io.Copy(io.Discard, h.r)
}

func answersAs(name string) func(string) string {
	return func(method string) string {
		switch method {
		case "elicitation/create":
			return `{"action":"accept","content":{"name":"` + name + `","check":true}}`
		case "sampling/createMessage":
			return `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"stub-model","stopReason":"endTurn"}`
		}
		return `error:{"code":-32601,"message":"Method not found"}`
	}
}

// TestServeHostAnswersEndToEnd records a session with server-everything
// whose tools make the server send elicitation/create and
// sampling/createMessage, then serves the cassette: a host answering as
// recorded gets every response byte for byte (exit 0); a host answering
// "Mallory" where "Ada" was recorded gets a JSON-RPC error for that tool
// call, a diff on stderr, and exit status 4.
func TestServeHostAnswersEndToEnd(t *testing.T) {
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
	live := &answeringHost{t: t, w: proxyIn, r: bufio.NewReader(proxyOut), answer: answersAs("Ada"), resp: map[string]string{}}
	elicitSession(live)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hostW.Close()
	if strings.Join(live.asked, ",") != "elicitation/create,sampling/createMessage" {
		t.Fatalf("the server asked %v", live.asked)
	}
	if !strings.Contains(live.resp["3"], "Name: Ada") {
		t.Fatalf("live elicitation result %s", live.resp["3"])
	}
	cas := filepath.Join(dir, derive.CassetteFile)

	serveWith := func(name string) (*answeringHost, *Result, string, error) {
		s, err := LoadFile(cas)
		if err != nil {
			t.Fatal(err)
		}
		hostW, srvIn := io.Pipe()
		srvOut, hostR := io.Pipe()
		var stderr strings.Builder
		type ret struct {
			res *Result
			err error
		}
		done := make(chan ret, 1)
		go func() {
			res, err := s.Serve(Options{Stdin: hostW, Stdout: hostR, Stderr: &stderr, AnswerTimeout: time.Minute})
			hostR.Close()
			done <- ret{res, err}
		}()
		h := &answeringHost{t: t, w: srvIn, r: bufio.NewReader(srvOut), answer: answersAs(name), resp: map[string]string{}}
		elicitSession(h)
		r := <-done
		return h, r.res, stderr.String(), r.err
	}

	same, res, stderr, err := serveWith("Ada")
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	for id, want := range live.resp {
		if got := same.resp[id]; got != want {
			t.Errorf("response %s: live %q, served %q", id, want, got)
		}
	}
	if res.Asked != 2 || res.Matched != 2 || res.Misses != 0 || strings.Join(same.asked, ",") != strings.Join(live.asked, ",") {
		t.Errorf("result %+v, asked %v\n%s", res, same.asked, stderr)
	}

	other, res, stderr, err := serveWith("Mallory")
	if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 || res.Matched != 1 {
		t.Fatalf("err %v (code %v), result %+v\n%s", err, exitcode.Of(err), res, stderr)
	}
	m, perr := mcp.Parse([]byte(other.resp["3"]))
	if perr != nil || m.Error == nil || !strings.Contains(string(m.Error), `"code":-32050`) || strings.Contains(other.resp["3"], "Ada") {
		t.Errorf("the Mallory call got %s", other.resp["3"])
	}
	if other.resp["4"] != live.resp["4"] {
		t.Errorf("the sampling call after the miss: live %q, served %q", live.resp["4"], other.resp["4"])
	}
	for _, w := range []string{"miss: the host's answer to the server's elicitation/create request", `-       "name": "Ada"`, `+       "name": "Mallory"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
