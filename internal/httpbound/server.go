// Package httpbound bounds what an HTTP peer can make the witness hold or
// wait for: the servers' connection limit, header size and timeouts
// (Server), and the client reads of remote evidence (a log, a witness, a
// key: NewClient), each answer bounded in size and time, with an error
// that names the URL and the bound it hit. docs/design/http-proxy.md
// ("Bounded everywhere a peer can push") gives the defaults and why.
package httpbound

import (
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// The servers' defaults (ServerOptions' zero values).
const (
	// DefaultMaxConns is how many connections a server keeps open at
	// once; past it, Accept waits until one closes (the kernel's listen
	// backlog holds the rest).
	DefaultMaxConns = 1024
	// DefaultReadHeaderTimeout is how long a client may take to send a
	// request's head, from the start of the request.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout is how long a kept-alive connection may wait
	// for its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's head (request line and
	// header fields); past it the answer is 431.
	DefaultMaxHeaderBytes = 64 << 10
)

// ServerOptions are the bounds of a server. A zero field takes its
// default; ReadTimeout and WriteTimeout stay off when zero, since they
// would cut a long stream (net/http cancels a request's context when the
// connection's read deadline passes, and a write deadline ends a
// server-sent event stream): only servers whose answers are short set
// them.
type ServerOptions struct {
	MaxConns          int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	ErrorLog          *log.Logger
}

func (o ServerOptions) maxConns() int {
	if o.MaxConns > 0 {
		return o.MaxConns
	}
	return DefaultMaxConns
}

// Server returns the http.Server for h with o's bounds, and ln wrapped
// so that at most o.MaxConns connections are open at once: serve it with
// srv.Serve(the returned listener).
func Server(h http.Handler, ln net.Listener, o ServerOptions) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: pick(o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       pick(o.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		ErrorLog:          o.ErrorLog,
	}
	if srv.MaxHeaderBytes <= 0 {
		srv.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return srv, LimitListener(ln, o.maxConns())
}

func pick(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// LimitListener returns ln accepting at most n connections open at once:
// past n, Accept waits until one of them is closed. Closing the listener
// ends a waiting Accept.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, slots: l.slots}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, at its first Close.
type limitConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}
