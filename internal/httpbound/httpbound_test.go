package httpbound

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/memtest"
)

// TestLimitListener: past n open connections Accept waits; closing one
// lets the next in; closing the listener ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(base, 2)
	accepted := make(chan net.Conn, 8)
	ended := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				ended <- err
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while two were open")
	case <-time.After(300 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second Close gives no second slot back
	third := <-accepted
	c, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-accepted:
		t.Fatal("a fourth connection was accepted while two were open")
	case <-time.After(300 * time.Millisecond):
	}
	ln.Close()
	if err := <-ended; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	second.Close()
	third.Close()
}

// TestServerBounds: the server of Server answers 431 to a head past
// MaxHeaderBytes, and closes a connection whose head is not in within
// ReadHeaderTimeout without an answer.
func TestServerBounds(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, ln := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), base,
		ServerOptions{ReadHeaderTimeout: 500 * time.Millisecond, MaxHeaderBytes: 4 << 10})
	go srv.Serve(ln)
	defer srv.Close()
	if srv.IdleTimeout != DefaultIdleTimeout || srv.WriteTimeout != 0 || srv.ReadTimeout != 0 {
		t.Errorf("idle %v, write %v, read %v: want the idle default and no read or write timeout", srv.IdleTimeout, srv.WriteTimeout, srv.ReadTimeout)
	}
	big, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	io.WriteString(big, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n")
	if l, _ := bufio.NewReader(big).ReadString('\n'); !strings.HasPrefix(l, "HTTP/1.1 431 ") {
		t.Errorf("a 16 KiB head: %q, want 431", l)
	}
	slow, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET / HTTP/1.1\r\nHost: x\r\n")
	if b, err := io.ReadAll(slow); len(b) != 0 || err != nil {
		t.Errorf("an unfinished head: read %q, %v; want a close without an answer", b, err)
	}
	resp, err := http.Get("http://" + base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a normal request: %s", resp.Status)
	}
}

// hostile serves every connection with fn, from a raw listener.
func hostile(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	return "http://" + ln.Addr().String() + "/log-key"
}

// readHead consumes the request's head, so that the peer is not reset.
func readHead(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		l, err := br.ReadString('\n')
		if err != nil || l == "\r\n" {
			return
		}
	}
}

func never(c net.Conn) { readHead(c); io.Copy(io.Discard, c) }

func endlessBody(c net.Conn) {
	readHead(c)
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
	chunk := []byte(strings.Repeat("x", 32<<10))
	for {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

func dribbleBody(c net.Conn) {
	readHead(c)
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
	for {
		if _, err := c.Write([]byte("x")); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func endlessHeader(c net.Conn) {
	readHead(c)
	io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Endless: ")
	chunk := []byte(strings.Repeat("h", 32<<10))
	for {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

// TestClientTotal: a peer that answers every read in time, slowly, ends
// at the client's total time; time between exchanges does not count.
func TestClientTotal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, "more")
	}))
	defer srv.Close()
	hc := NewClient(ClientOptions{Timeout: time.Second, Total: 700 * time.Millisecond})
	time.Sleep(time.Second) // before the first exchange: not counted
	for i := 0; ; i++ {
		resp, err := hc.Get(srv.URL)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			var te *TimeoutError
			if !errors.As(Unwrap(err), &te) || !te.Total || !strings.Contains(err.Error(), "passed their total time of 700ms") {
				t.Fatalf("read %d: %v, want the total time's TimeoutError", i, err)
			}
			if i == 0 {
				t.Errorf("the first read failed: %v", err)
			}
			return
		}
		if i > 20 {
			t.Fatal("still reading after 20 reads of 200 ms")
		}
	}
}

// TestClientHostile: against a server that never answers, one whose body
// never ends (fast or one byte at a time), and one whose head never ends,
// every read ends within the timeout with an error naming the URL and the
// bound, in bounded memory.
func TestClientHostile(t *testing.T) {
	const timeout = time.Second
	for _, c := range []struct {
		name string
		fn   func(net.Conn)
		want string
		as   func(error) bool
	}{
		{"never answers", never, "no complete answer within the timeout of 1s (awaiting the answer's head)", func(err error) bool { var e *TimeoutError; return errors.As(err, &e) }},
		{"endless body", endlessBody, "the answer's body passes the limit of 1048576 bytes", func(err error) bool { var e *LimitError; return errors.As(err, &e) }},
		{"dribbled body", dribbleBody, "no complete answer within the timeout of 1s (reading the answer's body)", func(err error) bool { var e *TimeoutError; return errors.As(err, &e) }},
		{"endless head", endlessHeader, "the answer's head passes the limit of 65536 bytes", func(err error) bool { var e *LimitError; return errors.As(err, &e) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := hostile(t, c.fn)
			hc := NewClient(ClientOptions{Timeout: timeout, MaxBody: 1 << 20})
			defer hc.CloseIdleConnections()
			var err error
			peak := memtest.Peak(func() {
				resp, e := hc.Get(url)
				if e != nil {
					err = Unwrap(e)
					return
				}
				defer resp.Body.Close()
				_, err = io.ReadAll(resp.Body)
			})
			if err == nil || !c.as(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v (%T), want one saying %q", err, err, c.want)
			}
			if !strings.Contains(err.Error(), "GET "+url+": ") {
				t.Errorf("error %q does not name GET %s", err, url)
			}
			t.Logf("%v; peak heap %d KiB", err, peak>>10)
			if peak > 16<<20 {
				t.Errorf("peak heap %d MiB, want under 16 MiB (the body bound is 1 MiB)", peak>>20)
			}
		})
	}
}
