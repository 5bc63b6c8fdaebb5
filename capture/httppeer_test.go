package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPeerServerEverythingHTTP runs the scripted session of
// TestPeerServerEverything against server-everything in streamableHttp
// mode with capture --url: the same calls, answered over POST and SSE, a
// GET stream, DELETE; the log re-derives from the message cassette, and
// two runs give the same message cassette and log (frozen time).
func TestPeerServerEverythingHTTP(t *testing.T) {
	node, entry := lvPeer(t, "server-everything")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, entry, "streamableHttp")
	cmd.Env = []string{fmt.Sprintf("PORT=%d", port), "PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	calls := []ScenarioCall{
		{Tool: "echo", Arguments: json.RawMessage(`{"message":"hi ✓"}`)},
		{Tool: "get-sum", Arguments: json.RawMessage(`{"a":1.5,"b":2}`)},
		{Tool: "no_such_tool", Arguments: json.RawMessage(`{}`)},
	}
	var first *httpCaptured
	for i := 0; i < 2; i++ {
		c := runHTTPCapture(t, "http://"+addr+"/mcp", calls, func(o *LiveOptions) { o.Header = nil })
		if c.err != nil {
			t.Fatalf("run %d: %v", i, c.err)
		}
		if c.res.Server.Name != "mcp-servers/everything" || c.res.Calls != 3 || c.res.ToolError != 1 {
			t.Fatalf("run %d: %+v", i, c.res)
		}
		for _, want := range []string{`"kind":"tool_response"`, `Echo: hi ✓`, `The sum of 1.5 and 2 is 3.5.`} {
			if !strings.Contains(string(c.events), want) {
				t.Fatalf("run %d: the log lacks %s:\n%s", i, want, c.events)
			}
		}
		if !bytes.Contains(c.http, []byte(`"method":"DELETE"`)) || !bytes.Contains(c.http, []byte(`"method":"GET"`)) {
			t.Fatalf("run %d: no GET stream or DELETE in the HTTP cassette", i)
		}
		checkHTTPRederive(t, c)
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.cassette, c.cassette) || !bytes.Equal(first.events, c.events) {
			t.Fatalf("two runs differ:\n%s\n---\n%s", first.events, c.events)
		}
	}
}
