package httpproxy

import (
	"bufio"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/serve/httpserve"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startEverything runs server-everything in mode (streamableHttp or sse)
// on a free port and returns its base URL.
func startEverything(t testing.TB, mode string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	entry := filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Skip("server-everything is not installed in testdata/peers")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, entry, mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return base
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server-everything %s did not listen on %d", mode, port)
	return ""
}

// sdkClient runs testdata/peers/mcphttpclient.mjs (the TypeScript SDK's
// StreamableHTTPClientTransport or SSEClientTransport) and returns its
// lines: one per step, what the SDK returned.
func sdkClient(t *testing.T, url, mode string) string {
	t.Helper()
	script := filepath.Join(testrepo.Root(t), "testdata", "peers", "mcphttpclient.mjs")
	out, err := exec.Command("node", script, url, mode).Output()
	if err != nil {
		t.Fatalf("client %s %s: %v\n%s", url, mode, err, out)
	}
	return string(out)
}

// TestPeersEverythingHTTP: the TypeScript SDK's clients get through the
// proxy, line for line, what they get direct from server-everything in
// streamableHttp and sse modes; each session's cassette replays through
// httpserve.ServeMCP to the same answers.
func TestPeersEverythingHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers")
	}
	for _, tc := range []struct{ mode, client, path string }{
		{"streamableHttp", "streamable", "/mcp"},
		{"sse", "sse", "/sse"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			up := startEverything(t, tc.mode)
			direct := sdkClient(t, up+tc.path, tc.client)
			s := startProxy(t, up, Options{})
			keepOnFailure(t, s.Dir)
			via := sdkClient(t, s.URL+tc.path, tc.client)
			if via != direct {
				t.Errorf("through the proxy:\n%s\ndirect:\n%s", via, direct)
			}
			// no wait for the proxy to see the client go: stop waits for
			// every exchange in flight, and whatever was forwarded is in
			// the cassettes when it returns (TestMCPAnswerBeforeRequestEnd)
			res, err := s.stop()
			if err != nil || res.MCPSessions != 1 {
				t.Fatalf("err %v, %+v", err, res)
			}
			evs, rep := sessionEvents(t, s.Dir, 1)
			if ok, why := verified(rep); !ok {
				t.Error(why)
			}
			calls := 0
			for _, e := range evs {
				if e.Kind == "tool_call" {
					calls++
				}
			}
			if calls != 2 {
				t.Errorf("%d tool calls in the session log, want 2 (echo, get-sum)", calls)
			}
			if res.Failure != "" {
				t.Errorf("failure %q", res.Failure)
			}
			// the session replays over Streamable HTTP to the same answers
			ready := make(chan string, 1)
			done := make(chan error, 1)
			var stderr syncBuffer
			go func() {
				_, err := httpserve.ServeMCP(filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile), httpserve.MCPServeOptions{Listen: httplocal.DefaultListen, Stderr: &stderr, ExitAfter: 1, Ready: func(u string) { ready <- u }})
				done <- err
			}()
			u := <-ready
			replayed := sdkClient(t, u+"/mcp", "streamable")
			if err := <-done; err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if replayed != direct {
				t.Errorf("replayed:\n%s\ndirect:\n%s", replayed, direct)
			}
			t.Logf("%d lines, %d bytes the same direct, through the proxy and replayed", strings.Count(direct, "\n"), len(direct))
		})
	}
}

// BenchmarkMCPRoundTrip measures a tools/call round trip (POST to the end
// of its server-sent event answer) against server-everything in
// streamableHttp mode: direct, through a bare hop (a plain
// httputil.ReverseProxy in the same process as the proxy, recording
// nothing: the floor of one extra HTTP hop) and through the proxy. The
// modes take turns call by call, in an order that rotates, so that a
// change in the machine's load hits them alike; it reports the p50 and p99
// of each in µs (scripts/bench.d/28-mcp-http.sh prints them with the
// ratios).
func BenchmarkMCPRoundTrip(b *testing.B) {
	up := startEverything(b, "streamableHttp")
	s := startProxy(b, up, Options{})
	upURL, err := url.Parse(up)
	if err != nil {
		b.Fatal(err)
	}
	hop := httputil.NewSingleHostReverseProxy(upURL)
	hop.Transport = newTransport()
	hop.FlushInterval = -1
	hopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hopSrv := &http.Server{Handler: hop}
	go hopSrv.Serve(hopLn)
	defer hopSrv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url, sid, body string) (string, time.Duration) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), time.Since(start)
	}
	open := func(url string) string {
		sid, _ := do(url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		do(url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return sid
	}
	modes := []struct {
		name, url, sid string
		took           []time.Duration
	}{{name: "direct", url: up + "/mcp"}, {name: "hop", url: "http://" + hopLn.Addr().String() + "/mcp"}, {name: "proxy", url: s.URL + "/mcp"}}
	// the witness binary as a process of its own, as a host runs it
	// ($WITNESS_BIN), and others to compare with ($WITNESS_BIN_BASE,
	// comma-separated: rows base, base2, ...)
	if bin := os.Getenv("WITNESS_BIN"); bin != "" {
		modes = append(modes, struct {
			name, url, sid string
			took           []time.Duration
		}{name: "binary", url: startBinaryProxy(b, bin, up) + "/mcp"})
	}
	if bases := os.Getenv("WITNESS_BIN_BASE"); bases != "" {
		for i, bin := range strings.Split(bases, ",") {
			name := "base"
			if i > 0 {
				name += strconv.Itoa(i + 1)
			}
			modes = append(modes, struct {
				name, url, sid string
				took           []time.Duration
			}{name: name, url: startBinaryProxy(b, bin, up) + "/mcp"})
		}
	}
	for i := range modes {
		modes[i].sid = open(modes[i].url)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench %d"}}}`, i+1, i)
		for j := range modes {
			m := &modes[(i+j)%len(modes)]
			_, d := do(m.url, m.sid, body)
			m.took = append(m.took, d)
		}
	}
	b.StopTimer()
	pct := func(v []time.Duration, q float64) float64 {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return float64(v[int(q*float64(len(v)-1))].Microseconds())
	}
	for _, m := range modes {
		b.ReportMetric(pct(m.took, 0.5), m.name+"-p50-µs")
		b.ReportMetric(pct(m.took, 0.99), m.name+"-p99-µs")
	}
}

// startBinaryProxy runs `BIN proxy --listen 127.0.0.1:0 --upstream up` and
// returns its URL; it is stopped with SIGINT at the end of the benchmark.
func startBinaryProxy(b *testing.B, bin, up string) string {
	b.Helper()
	cmd := exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", up, "--out", filepath.Join(b.TempDir(), "rec"))
	for _, kv := range os.Environ() {
		if n, _, _ := strings.Cut(kv, "="); n != "WITNESS_KEYRING" && n != "ATW_WITNESS_TS" && n != "PORT" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		b.Fatalf("%s proxy did not say where it listens", bin)
		return ""
	}
}
