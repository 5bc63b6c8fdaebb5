package wirediff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agent-trace-witness/witness/mcp"
)

// Case is one hostile answer: what the upstream sends back, byte for byte.
type Case struct {
	Name string
	// API is the channel (APIChat, APIChatSSE, ..., APIMCP, APIMCPStream).
	API    string
	Status int
	// Header lines in order, sent as given (names not canonicalised).
	Header [][2]string
	Body   []byte
	// NoLength sends the body without Content-Length, ended by closing the
	// connection.
	NoLength bool
	// Pieces > 0 writes the body Pieces bytes at a time, each write apart,
	// so that its frames are split across the client's reads.
	Pieces int
}

// write sends the case on c, in pieces when the case says so.
func (cs Case) write(c net.Conn) {
	raw := cs.Raw()
	if cs.Pieces <= 0 {
		c.Write(raw)
		return
	}
	head := len(raw) - len(cs.Body)
	c.Write(raw[:head])
	for b := raw[head:]; len(b) > 0; {
		n := min(cs.Pieces, len(b))
		if _, err := c.Write(b[:n]); err != nil {
			return
		}
		b = b[n:]
		time.Sleep(200 * time.Microsecond)
	}
}

// Raw is the case's HTTP/1.1 response as the upstream writes it.
func (c Case) Raw() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", c.Status, http.StatusText(c.Status))
	for _, h := range c.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	body := c.Body
	if !c.NoLength {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// Upstream is an HTTP server on the loopback that answers with the
// current case's exact bytes. For the MCP channels it is a minimal
// Streamable HTTP server: initialize gets a well-formed answer with a
// session id, notifications 202, GET 405, DELETE 200, and tools/call the
// case.
type Upstream struct {
	ln   net.Listener
	mu   sync.Mutex
	cur  Case
	wg   sync.WaitGroup
	Errs []error
}

// NewUpstream listens on 127.0.0.1 and serves until Close.
func NewUpstream() (*Upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &Upstream{ln: ln}
	u.wg.Add(1)
	go u.accept()
	return u, nil
}

// URL is the upstream's base URL.
func (u *Upstream) URL() string { return "http://" + u.ln.Addr().String() }

// Set makes c the answer of the requests that follow.
func (u *Upstream) Set(c Case) {
	u.mu.Lock()
	u.cur = c
	u.mu.Unlock()
}

// Close stops the server and waits for its connections.
func (u *Upstream) Close() error {
	err := u.ln.Close()
	u.wg.Wait()
	return err
}

func (u *Upstream) accept() {
	defer u.wg.Done()
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			u.serve(c)
		}()
	}
}

const initResult = `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"wirediff","version":"1.0.0"}}}`

func (u *Upstream) serve(c net.Conn) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	u.mu.Lock()
	cs := u.cur
	u.mu.Unlock()
	if cs.API != APIMCP && cs.API != APIMCPStream {
		cs.write(c)
		return
	}
	switch req.Method {
	case http.MethodGet:
		c.Write([]byte("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		return
	case http.MethodDelete:
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &msg)
	switch {
	case msg.ID == nil:
		c.Write([]byte("HTTP/1.1 202 Accepted\r\nMcp-Session-Id: wirediff-session-1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	case msg.Method == mcp.MethodInitialize:
		b := fmt.Sprintf(initResult, msg.ID)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: wirediff-session-1\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s", strconv.Itoa(len(b)), b)
	default:
		cs.write(c)
	}
}
