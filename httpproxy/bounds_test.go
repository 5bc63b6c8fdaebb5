//go:build linux

package httpproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/httpbound"
)

// headerConn is what one connection of TestProxyHeaderFlood saw.
type headerConn struct {
	sent     int           // header bytes written before the proxy closed it
	answer   string        // what the proxy answered ("" when it only closed)
	closedIn time.Duration // from the first byte to the close
	err      error         // a failure of the test's own side
}

// TestProxyHeaderFlood starts the real `witness proxy --listen` binary
// ($WITNESS_BIN when set, else built from ./cmd/witness) and opens 1,000
// connections at once, each sending the head of a request line by line
// towards 1 MB without ever ending it: half dribble fast (25 KB/s), half
// slowly (4 KB/s). The proxy's own peak resident memory (VmHWM of its
// process, sampled) stays under 256 MiB; the fast ones are answered 431
// once past the header bound (64 KiB), the slow ones closed without an
// answer by the header timeout (10 s) long before 1 MB; then a normal
// client still gets its answer through the proxy, and the proxy ends
// cleanly at SIGTERM. Fewer connections are used, and the test says so,
// when RLIMIT_NOFILE cannot be raised for 1,000.
func TestProxyHeaderFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections for ~15 s")
	}
	const (
		limit   = 256 << 20
		total   = 1 << 20 // what each connection would send
		line    = 1000    // bytes per header line
		fastGap = 40 * time.Millisecond
		slowGap = 250 * time.Millisecond
	)
	n := floodConns(t, 1000)
	witness := os.Getenv("WITNESS_BIN")
	if witness == "" {
		witness = goBuild(t, "./cmd/witness", t.TempDir())
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "upstream ok") }))
	defer up.Close()
	work := t.TempDir()
	env := []string{eventlog.EnvTS + "=2026-08-30T14:33:00+00:00", "HOME=" + work, "WITNESS_KEYRING=" + filepath.Join(work, "keys.json")}
	px := startDaemon(t, env, witness, "proxy", "--out", filepath.Join(work, "rec"), "--listen", "127.0.0.1:0", "--upstream", up.URL)
	addr := strings.TrimPrefix(px.URL, "http://")

	peakHWM := sampleHWM(px.cmd.Process.Pid)

	conns := make([]headerConn, n)
	var wg sync.WaitGroup
	for i := range conns {
		gap := fastGap
		if i%2 == 1 {
			gap = slowGap
		}
		wg.Add(1)
		go func() { defer wg.Done(); conns[i] = dribble(addr, total, line, gap) }()
	}
	wg.Wait()

	// a normal client afterwards
	resp, err := http.Get(px.URL + "/v1/ping")
	if err != nil {
		t.Fatalf("a normal request after the flood: %v\n%s", err, px.stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "upstream ok" {
		t.Errorf("a normal request after the flood: %s %q", resp.Status, body)
	}
	code := px.stop(t)
	peak := peakHWM()
	if code != 0 {
		t.Errorf("proxy exit %d\n%s", code, px.stderr.String())
	}

	t.Logf("%d connections: proxy peak RSS (VmHWM) %d MiB", n, peak>>20)
	if peak == 0 || peak >= limit {
		t.Errorf("proxy peak RSS %d MiB, want under %d MiB", peak>>20, limit>>20)
	}
	fast, slow := judgeFlood(t, conns, total)
	t.Logf("fast ones answered 431 after a median %v, slow ones closed after a median %v", median(fast), median(slow))
}

// sampleHWM samples the peak resident memory of process pid every 50 ms
// until the returned function is called, which returns the largest.
func sampleHWM(pid int) func() int64 {
	hwm := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		var peak int64
		for {
			peak = max(peak, procHWM(pid))
			select {
			case <-stop:
				hwm <- peak
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int64 { close(stop); return <-hwm }
}

// judgeFlood checks what each connection of TestProxyHeaderFlood saw
// (the even ones fast, the odd ones slow) and returns how long the fast
// and the slow ones were open.
func judgeFlood(t *testing.T, conns []headerConn, total int) (fast, slow []time.Duration) {
	t.Helper()
	bad := 0
	for i, c := range conns {
		var why string
		switch {
		case c.err != nil:
			why = c.err.Error()
		case c.sent >= total:
			why = fmt.Sprintf("the proxy took all %d bytes of an unending head", c.sent)
		case i%2 == 0 && !strings.HasPrefix(c.answer, "HTTP/1.1 431 "):
			why = fmt.Sprintf("fast, %d bytes sent: answered %q, want 431", c.sent, c.answer)
		case i%2 == 0:
			fast = append(fast, c.closedIn)
		case c.answer != "":
			why = fmt.Sprintf("slow, %d bytes sent: answered %q, want a close by the header timeout", c.sent, c.answer)
		case c.sent > httpbound.DefaultMaxHeaderBytes:
			why = fmt.Sprintf("slow: closed after %d bytes, past the header bound", c.sent)
		default:
			slow = append(slow, c.closedIn)
		}
		if why != "" {
			if bad++; bad <= 5 {
				t.Errorf("connection %d: %s", i, why)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d connections in all failed", bad)
	}
	return fast, slow
}

// floodConns raises RLIMIT_NOFILE for want connections on each side (the
// test's and the proxy's, which inherits it) and returns how many the
// limit allows.
func floodConns(t *testing.T, want int) int {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	need := uint64(want + 256)
	if rl.Cur < need {
		old := rl.Cur
		rl.Cur = min(need, rl.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			rl.Cur = old
		}
	}
	if n := int(rl.Cur) - 256; n < want {
		t.Logf("RLIMIT_NOFILE is %d (hard %d): %d connections instead of %d", rl.Cur, rl.Max, n, want)
		if n < 10 {
			t.Skip("too few file descriptors")
		}
		return n
	}
	return want
}

// dribble opens a connection to addr and writes the head of a request,
// one header line of size bytes every gap, towards total bytes, until the
// proxy answers or closes the connection.
func dribble(addr string, total, size int, gap time.Duration) headerConn {
	var c headerConn
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		c.err = err
		return c
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		var got bytes.Buffer
		io.Copy(&got, io.LimitReader(conn, 4096)) // EOF or a reset end it
		if b, _, ok := bytes.Cut(got.Bytes(), []byte("\r\n")); ok || got.Len() > 0 {
			c.answer = string(b)
		}
		c.closedIn = time.Since(start)
		close(closed)
	}()
	head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\n", addr)
	pad := strings.Repeat("a", size-len("X-Pad-0000000: \r\n"))
	deadline := time.After(45 * time.Second)
	open := func(why string) headerConn {
		conn.Close()
		<-closed
		c.err = fmt.Errorf("%s after 45 s and %d bytes: not closed by the header timeout", why, c.sent)
		return c
	}
	defer conn.Close()
	for c.sent < total {
		if _, err := io.WriteString(conn, head); err != nil {
			break // the proxy closed it
		}
		c.sent += len(head)
		head = "X-Pad-" + fmt.Sprintf("%07d", c.sent) + ": " + pad + "\r\n"
		select {
		case <-closed:
			return c
		case <-deadline:
			return open("still open")
		case <-time.After(gap):
		}
	}
	select {
	case <-closed:
		return c
	case <-deadline:
		return open("all sent, still open")
	}
}

// procHWM returns the peak resident set size of process pid in bytes (0
// once it is gone).
func procHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2].Round(100 * time.Millisecond)
}

// TestUpstreamHugeHead: an upstream whose answer's head never ends is cut
// at the header bound (64 KiB, not net/http's 10 MB): the client gets a
// 502 and the cassette and the log say the exchange failed.
func TestUpstreamHugeHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Endless: ")
				chunk := []byte(strings.Repeat("h", 32<<10))
				for {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	s := startProxy(t, "http://"+ln.Addr().String(), Options{})
	resp, body := post(t, s.URL+"/v1/chat/completions", `{}`, nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "exceeded 65536 bytes") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Failure, "exchange 1: upstream: ") {
		t.Errorf("failure %q", res.Failure)
	}
}
