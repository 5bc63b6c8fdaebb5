package httpbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The clients' defaults (ClientOptions' zero values).
const (
	// DefaultTimeout bounds one exchange, from sending the request to
	// the last byte of the answer.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBody bounds an answer's body.
	DefaultMaxBody = 16 << 20
)

// ClientOptions are the bounds of a client's every exchange. A zero field
// takes its default.
type ClientOptions struct {
	// Timeout bounds one exchange: its request, its answer's head and
	// the whole of its body (DefaultTimeout).
	Timeout time.Duration
	// Total, when not 0, bounds the time of all the client's exchanges
	// together (each from its request to the end of its answer's body,
	// summed): a peer that answers every read in time but never runs out
	// of things to be read (a log claiming a huge size) ends too, and
	// time the caller spends between exchanges does not count.
	Total time.Duration
	// MaxBody bounds an answer's body in bytes (DefaultMaxBody).
	MaxBody int64
	// MaxHeaderBytes bounds an answer's head (DefaultMaxHeaderBytes, the
	// servers' bound of a request's head).
	MaxHeaderBytes int64
}

// TimeoutError is an exchange that did not end within its timeout.
type TimeoutError struct {
	Method, URL string
	Limit       time.Duration
	Stage       string // "awaiting the answer's head" or "reading the answer's body"
	Total       bool   // the limit was ClientOptions.Total, not Timeout
}

func (e *TimeoutError) Error() string {
	if e.Total {
		return fmt.Sprintf("%s %s: the reads of this peer passed their total time of %v (%s)", e.Method, e.URL, e.Limit, e.Stage)
	}
	return fmt.Sprintf("%s %s: no complete answer within the timeout of %v (%s)", e.Method, e.URL, e.Limit, e.Stage)
}

// Timeout reports true (net.Error).
func (e *TimeoutError) Timeout() bool { return true }

// Temporary reports false (net.Error).
func (e *TimeoutError) Temporary() bool { return false }

// LimitError is an answer whose head or body passed its size bound.
type LimitError struct {
	Method, URL string
	Part        string // "head" or "body"
	Limit       int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %s: the answer's %s passes the limit of %d bytes", e.Method, e.URL, e.Part, e.Limit)
}

// Unwrap returns the TimeoutError or LimitError that err (a Client.Do
// error, a *url.Error) wraps, which names the URL already; any other
// error as it is.
func Unwrap(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	var te *TimeoutError
	var le *LimitError
	switch {
	case errors.As(ue.Err, &te):
		return te
	case errors.As(ue.Err, &le):
		return le
	}
	return err
}

// NewClient returns a client whose every exchange is bounded by o: a
// TimeoutError past o.Timeout, a LimitError past o.MaxBody bytes of an
// answer's body or past o.MaxHeaderBytes of its head. It
// follows redirects as http.DefaultClient does, each with its own
// timeout, and takes proxies from the environment.
func NewClient(o ClientOptions) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	t := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    min(o.Timeout, 10*time.Second),
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: o.MaxHeaderBytes,
	}
	return &http.Client{Transport: &boundTransport{next: t, o: o}}
}

type boundTransport struct {
	next http.RoundTripper
	o    ClientOptions

	mu    sync.Mutex
	spent time.Duration // the exchanges' time so far, for Total
}

// exchange is one exchange's deadline: its timeout, or what is left of
// the client's total time when that is less.
type exchange struct {
	ctx   context.Context
	total bool
	start time.Time
	once  sync.Once
}

// end counts the exchange's time into the total, once.
func (t *boundTransport) end(x *exchange) {
	x.once.Do(func() {
		t.mu.Lock()
		t.spent += time.Since(x.start)
		t.mu.Unlock()
	})
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	limit, total := t.o.Timeout, false
	if t.o.Total > 0 {
		t.mu.Lock()
		left := t.o.Total - t.spent
		t.mu.Unlock()
		if left < limit {
			limit, total = max(left, 0), true
		}
	}
	ctx, cancel := context.WithTimeout(req.Context(), limit)
	x := &exchange{ctx: ctx, total: total, start: time.Now()}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		t.end(x)
		return nil, t.explain(x, req, err, "awaiting the answer's head")
	}
	resp.Body = &boundBody{rc: resp.Body, left: t.o.MaxBody, cancel: cancel, x: x, req: req, t: t}
	return resp, nil
}

// explain turns err into a TimeoutError when the exchange's own deadline
// passed (not the caller's context).
func (t *boundTransport) explain(x *exchange, req *http.Request, err error, stage string) error {
	switch {
	case errors.Is(x.ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == nil:
		e := &TimeoutError{Method: req.Method, URL: req.URL.Redacted(), Limit: t.o.Timeout, Stage: stage}
		if x.total {
			e.Limit, e.Total = t.o.Total, true
		}
		return e
	case strings.Contains(err.Error(), "server response headers exceeded"): // net/http's error, not exported
		return &LimitError{Method: req.Method, URL: req.URL.Redacted(), Part: "head", Limit: t.o.MaxHeaderBytes}
	}
	return err
}

// boundBody is an answer's body: a LimitError past its bound, a
// TimeoutError past the exchange's deadline.
type boundBody struct {
	rc     io.ReadCloser
	left   int64
	cancel context.CancelFunc
	x      *exchange
	req    *http.Request
	t      *boundTransport
}

func (b *boundBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		b.left = 0
		return 0, &LimitError{Method: b.req.Method, URL: b.req.URL.Redacted(), Part: "body", Limit: b.t.o.MaxBody}
	}
	b.left -= int64(n)
	if err != nil {
		b.t.end(b.x)
	}
	if err != nil && err != io.EOF {
		err = b.t.explain(b.x, b.req, err, "reading the answer's body")
	}
	return n, err
}

func (b *boundBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	b.t.end(b.x)
	return err
}
