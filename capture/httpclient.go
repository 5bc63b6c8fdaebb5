package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/internal/version"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/modelapi"
)

// Defaults of the live Streamable HTTP client.
const (
	// defaultStreamLinger is how long the client keeps reading a POST's
	// SSE stream after the response it waited for, for what the server
	// sends before it closes the stream (the spec says it should close it
	// then); a stream still open after it is closed by the client.
	defaultStreamLinger = 2 * time.Second
	// defaultRetry is the wait before resuming a stream that ended early
	// when the server gave no retry: field.
	defaultRetry = time.Second
	// maxResume bounds the resumptions (GET with Last-Event-ID) of one
	// request's stream.
	maxResume = 5
	// streamWait bounds the wait for the GET stream's head after
	// initialize (see openStream).
	streamWait = 2 * time.Second
	// maxAnswerDepth bounds answers in progress at once (see answer).
	maxAnswerDepth = 8
	// maxErrorBody is the most of an error answer (4xx, 5xx, a wrong
	// content type) the client reads and records.
	maxErrorBody = 64 << 10
)

// httpOptions configure a live MCP client over the Streamable HTTP
// transport (MCP 2025-03-26 and later).
type httpOptions struct {
	URL string
	// Header holds headers sent with every request (--header), such as
	// Authorization; credential values reach the cassette only as keyed
	// hashes.
	Header http.Header

	Protocol   string        // pinned in initialize; default mcp.DefaultProtocol
	Timeout    time.Duration // per request, stream resumptions included; default DefaultTimeout
	MaxMessage int           // largest message: a JSON body or an SSE event; default mcp.DefaultMaxLine
	Linger     time.Duration // default DefaultStreamLinger

	Recorder *httpRecorder // required: every exchange is recorded here, each byte before it is parsed
	// Messages is required: every JSON-RPC message is recorded here, in
	// the stdio cassette format, before it is sent or acted on (the event
	// log is derived from it, as for a stdio server).
	Messages *cassette.Writer
	Warn     func(msg string) // warnings; may be nil
	// Answer, when set, answers the server's requests it knows; the others
	// get ping's empty result or "method not found". Capabilities are the
	// client capabilities sent in initialize ({} when nil).
	Answer       AnswerFunc
	Capabilities json.RawMessage
	// Transport reaches the server; nil: NewHTTPTransport().
	Transport http.RoundTripper
}

// newHTTPTransport returns the client's default transport: no compression
// asked for (bodies are recorded as they come, and a compressed body the
// client did not ask for is refused, not inflated), no proxy from the
// environment. Redirects are never followed (the client's CheckRedirect).
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the request's own timeout bounds it
		// an answer's head is bounded as the witness's servers bound a
		// request's (net/http's default is 10 MB)
		MaxResponseHeaderBytes: httpbound.DefaultMaxHeaderBytes,
	}
}

// ParseServerURL checks the URL of an MCP server: http or https, a host,
// no user information (credentials go in --header, where they are
// hashed), no fragment. Errors carry exit code Usage.
func ParseServerURL(s string) (*url.URL, error) {
	hint := "give the MCP endpoint, such as --url http://127.0.0.1:3001/mcp"
	u, err := url.Parse(s)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--url %q: %w", s, err), hint)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--url %q: the scheme must be http or https", s), hint)
	case u.Host == "":
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--url %q: no host", s), hint)
	case u.User != nil:
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--url: user information in the URL would reach the cassette"), "pass credentials with --header 'Authorization: ...', which is recorded as a keyed hash")
	case u.Fragment != "":
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--url %q: a fragment is never sent", s), hint)
	}
	return u, nil
}

// ParseHeaderLines turns --header lines ("Name: value", repeatable) into
// the headers sent with every request; the value is trimmed. A line
// without a colon, or whose name is empty or holds a blank, is a usage
// error.
func ParseHeaderLines(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, line := range lines {
		name, val, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--header %q: not 'Name: value'", line), "for example --header 'Authorization: Bearer TOKEN'")
		}
		h.Add(name, strings.TrimSpace(val))
	}
	return h, nil
}

// httpClient is a live MCP client over Streamable HTTP: each message is a
// POST answered with JSON, with an SSE stream, or with 202 Accepted;
// Mcp-Session-Id and MCP-Protocol-Version are sent once initialize gave
// them; a GET stream carries the server's own requests when the server
// offers one; DELETE ends the session. Every exchange is recorded before
// its bytes are acted on, and replies are matched by the exact id token.
type httpClient struct {
	o   httpOptions
	u   *url.URL
	hc  *http.Client
	rec *httpRecorder

	mu        sync.Mutex
	nextID    int64
	session   string
	protoHdr  string // MCP-Protocol-Version, once negotiated
	getCancel context.CancelFunc
	getDone   chan struct{}
	closed    bool
	depth     atomic.Int32 // answers to server requests in progress

	InitializeResult json.RawMessage
	Protocol         string
}

// startHTTP returns a client for o.URL; nothing is sent before Initialize.
func startHTTP(o httpOptions) (*httpClient, error) {
	if o.Recorder == nil || o.Messages == nil {
		return nil, errors.New("start HTTP client: no recorder or message cassette")
	}
	if o.Protocol == "" {
		o.Protocol = mcp.DefaultProtocol
	}
	if !mcp.Supported(o.Protocol) {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("protocol version %q is not supported", o.Protocol),
			"use one of "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = mcp.DefaultMaxLine
	}
	if o.Linger <= 0 {
		o.Linger = defaultStreamLinger
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	u, err := ParseServerURL(o.URL)
	if err != nil {
		return nil, err
	}
	tr := o.Transport
	if tr == nil {
		tr = newHTTPTransport()
	}
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &httpClient{o: o, u: u, hc: hc, rec: o.Recorder, nextID: 1}, nil
}

// do sends req. An error names the URL as the cassette does, credential
// query values hashed: it is recorded (an error record, the log's end).
func (c *httpClient) do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	var ue *url.Error
	if err != nil && errors.As(err, &ue) {
		ue.URL, _ = c.rec.URI(ue.URL)
	}
	return resp, err
}

// where is the server's URL as it may be written.
func (c *httpClient) where() string {
	s, _ := c.rec.URI(c.u.Redacted())
	return s
}

// httpAnswer is what one POST (or a resumed stream) brought back.
type httpAnswer struct {
	reply *mcp.Message // the response to the request, when one was awaited and came
}

// Request sends a request and waits for the reply with the same id token,
// on the POST's JSON answer or its SSE stream (resumed with a GET and
// Last-Event-ID when the stream ends before the reply).
func (c *httpClient) Request(method string, params json.RawMessage) (*mcp.Message, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	idTok := json.RawMessage(strconv.FormatInt(id, 10))
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	a, err := c.post(ctx, method, mcp.Request(id, method, params), idTok)
	if err != nil {
		if ctx.Err() != nil {
			if method != mcp.MethodInitialize {
				reason, _ := json.Marshal(fmt.Sprintf("timed out after %s", c.o.Timeout))
				c.notify(mcp.NotificationCancelled, json.RawMessage(`{"requestId":`+string(idTok)+`,"reason":`+string(reason)+`}`))
			}
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("server did not answer %s (id %d) within %s: %w", method, id, c.o.Timeout, err),
				"raise --timeout if the server is slow; the cassette shows everything it sent")
		}
		return nil, err
	}
	return a.reply, nil
}

// notify sends a notification (or a response to the server) and expects
// 202 Accepted; another success is recorded and tolerated.
func (c *httpClient) notify(method string, params json.RawMessage) error {
	return c.send(method, mcp.Notification(method, params))
}

func (c *httpClient) send(what string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	_, err := c.post(ctx, what, body, nil)
	return err
}

// headers returns the request headers: --header values first, then those
// the transport needs.
func (c *httpClient) headers(accept string) http.Header {
	h := http.Header{}
	for k, vs := range c.o.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	h.Set("Accept", accept)
	h.Set("User-Agent", "witness/"+version.Version)
	c.mu.Lock()
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
	}
	if c.protoHdr != "" {
		h.Set("Mcp-Protocol-Version", c.protoHdr)
	}
	c.mu.Unlock()
	return h
}

// post sends one message; id is the token of the request whose reply is
// awaited (nil for a notification or an answer).
func (c *httpClient) post(ctx context.Context, what string, body []byte, id json.RawMessage) (*httpAnswer, error) {
	h := c.headers("application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("POST %s: %w", what, err), "")
	}
	req.Header = h
	x, err := c.rec.Request(req, body)
	if err != nil {
		return nil, err
	}
	if _, err := c.o.Messages.Record(cassette.C2S, body, false); err != nil {
		return nil, c.rec.failed(err)
	}
	resp, err := c.do(req)
	if err != nil {
		c.rec.Fail(x, err.Error())
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("POST %s to %s: %w", what, c.where(), err), "check that the server listens at --url")
	}
	if err := c.rec.Response(x, resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if what == mcp.MethodInitialize && resp.StatusCode/100 == 2 {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			c.mu.Lock()
			c.session = sid
			c.mu.Unlock()
		}
	}
	if err := c.checkStatus(x, what, resp); err != nil {
		return nil, err
	}
	a := &httpAnswer{}
	switch bodyKind(resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")) {
	case "json":
		data, err := c.rec.ReadBody(x, resp.Body, c.o.MaxMessage, nil)
		if err != nil {
			return nil, c.bodyError(what, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			m, done := c.dispatch(data, id)
			if done {
				a.reply = m
			}
		}
	case "sse":
		last, retry, err := c.readStream(ctx, x, resp.Body, id, a)
		if err != nil {
			return nil, c.bodyError(what, err)
		}
		for i := 0; id != nil && a.reply == nil && last != "" && i < maxResume; i++ {
			if last, retry, err = c.resume(ctx, what, last, retry, id, a); err != nil {
				return nil, err
			}
		}
	default:
		if resp.StatusCode == http.StatusAccepted {
			if _, err := c.rec.ReadBody(x, resp.Body, maxErrorBody, nil); err != nil {
				return nil, c.bodyError(what, err)
			}
			break
		}
		data, _ := c.rec.ReadBody(x, resp.Body, maxErrorBody, nil)
		return nil, exitcode.New(exitcode.Failure,
			fmt.Errorf("server answered %s with content type %q%s: %s", what, resp.Header.Get("Content-Type"), encodingNote(resp), preview(data)),
			"an MCP server answers a POST with application/json or text/event-stream (or 202 for a notification); check --url")
	}
	if id != nil && a.reply == nil {
		if resp.StatusCode == http.StatusAccepted {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("server answered request %s with 202 Accepted and no response", what), "")
		}
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("server ended its answer to %s without a response with id %s", what, id), "the cassette shows everything it sent")
	}
	return a, nil
}

func encodingNote(resp *http.Response) string {
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		return " and content encoding " + strconv.Quote(ce) + " (witness asks for none)"
	}
	return ""
}

func (c *httpClient) bodyError(what string, err error) error {
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		return err
	}
	return exitcode.New(exitcode.Failure, fmt.Errorf("read the answer to %s: %w", what, err), "what was received is in the cassette")
}

// checkStatus turns a status the client cannot go on with into an error
// (after recording the answer's body, up to maxErrorBody): a redirect (never
// followed), 401 (with the server's WWW-Authenticate as the hint), and
// every other status outside 2xx.
func (c *httpClient) checkStatus(x int64, what string, resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	data, _ := c.rec.ReadBody(x, resp.Body, maxErrorBody, nil)
	if bodyKind(resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")) == "json" && len(bytes.TrimSpace(data)) > 0 {
		c.dispatch(data, nil) // a JSON-RPC error answer (id null) is a message
	}
	msg := fmt.Sprintf("server answered %s with HTTP %s", what, resp.Status)
	if len(bytes.TrimSpace(data)) > 0 {
		msg += ": " + preview(data)
	}
	switch {
	case resp.StatusCode/100 == 3:
		return exitcode.New(exitcode.Failure, fmt.Errorf("%s (to %s)", msg, resp.Header.Get("Location")),
			"witness does not follow redirects; give the final URL with --url")
	case resp.StatusCode == http.StatusUnauthorized:
		hint := "the server wants authorization: pass --header 'Authorization: Bearer TOKEN' (recorded as a keyed hash)"
		if wa := resp.Header.Get("WWW-Authenticate"); wa != "" {
			hint = "the server wants authorization (WWW-Authenticate: " + wa + "); get a token as it says and pass --header 'Authorization: Bearer TOKEN' (recorded as a keyed hash)"
		}
		return exitcode.New(exitcode.Failure, errors.New(msg), hint)
	case resp.StatusCode == http.StatusNotFound && c.sessionID() != "":
		return exitcode.New(exitcode.Failure, fmt.Errorf("%s: the server no longer knows session %s", msg, c.sessionID()), "the session expired; run the capture again")
	}
	return exitcode.New(exitcode.Failure, errors.New(msg), "the cassette holds the server's answer")
}

func (c *httpClient) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// readStream reads an SSE answer: each event's data is a message,
// dispatched as it comes. After the awaited reply the stream is read on
// for Linger, then closed. It returns the last event id and retry, for a
// resumption when the stream ended before the reply.
func (c *httpClient) readStream(ctx context.Context, x int64, body io.ReadCloser, id json.RawMessage, a *httpAnswer) (string, time.Duration, error) {
	var perr error
	stop := &bodyStop{}
	var linger *time.Timer
	p := modelapi.NewSSEParser(c.o.MaxMessage, func(e modelapi.SSEEvent) {
		if !messageEvent(e) {
			return // a priming event, or one of another type
		}
		if m, done := c.dispatch(e.Data, id); done && a.reply == nil {
			a.reply = m
			// what the server sends before it closes the stream is kept;
			// a stream left open is closed by the client
			linger = time.AfterFunc(c.o.Linger, func() {
				stop.close(body, fmt.Sprintf("closed by witness %s after the response (the server kept the stream open)", c.o.Linger))
			})
		}
	}, func(n, size int) {
		stop.set(fmt.Sprintf("cut off by witness: SSE event %d is over the limit of %d bytes", n, c.o.MaxMessage))
		perr = exitcode.New(exitcode.Failure, fmt.Errorf("server sent an SSE event (number %d) of more than %s", n, mcp.FormatSize(c.o.MaxMessage)),
			"raise the limit with --max-line if the server is expected to send larger messages; what was received is in the cassette")
	})
	_, err := c.rec.readBody(x, body, -1, func(b []byte) bool {
		p.Feed(b)
		if p.Over() && perr == nil {
			// the event is skipped whatever follows: stop reading it now
			stop.set(fmt.Sprintf("cut off by witness: an SSE event is over the limit of %d bytes", c.o.MaxMessage))
			perr = exitcode.New(exitcode.Failure, fmt.Errorf("server sent an SSE event of more than %s", mcp.FormatSize(c.o.MaxMessage)),
				"raise the limit with --max-line if the server is expected to send larger messages; what was received is in the cassette")
		}
		return perr == nil
	}, stop)
	if linger != nil {
		linger.Stop()
	}
	retry := defaultRetry
	if ms, ok := p.Retry(); ok {
		retry = time.Duration(ms) * time.Millisecond
	}
	if perr != nil {
		return "", 0, perr
	}
	if err != nil && a.reply == nil {
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		return "", 0, err
	}
	return p.LastEventID(), retry, nil
}

// resume waits retry, then GETs the stream again with Last-Event-ID
// (Streamable HTTP resumability) and reads it like the POST's stream.
func (c *httpClient) resume(ctx context.Context, what, last string, retry time.Duration, id json.RawMessage, a *httpAnswer) (string, time.Duration, error) {
	c.o.Warn(fmt.Sprintf("the server ended the stream of %s before the response; resuming after event %q in %s", what, last, retry))
	select {
	case <-time.After(retry):
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
	h := c.headers("text/event-stream")
	h.Set("Last-Event-Id", last)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.u.String(), nil)
	if err != nil {
		return "", 0, err
	}
	req.Header = h
	x, err := c.rec.Request(req, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.do(req)
	if err != nil {
		c.rec.Fail(x, err.Error())
		return "", 0, exitcode.New(exitcode.Failure, fmt.Errorf("resume the stream of %s: %w", what, err), "")
	}
	if err := c.rec.Response(x, resp); err != nil {
		resp.Body.Close()
		return "", 0, err
	}
	if err := c.checkStatus(x, "the resumption of "+what, resp); err != nil {
		return "", 0, err
	}
	if bodyKind(resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")) != "sse" {
		data, _ := c.rec.ReadBody(x, resp.Body, maxErrorBody, nil)
		return "", 0, exitcode.New(exitcode.Failure, fmt.Errorf("server answered the resumption of %s with content type %q: %s", what, resp.Header.Get("Content-Type"), preview(data)), "")
	}
	nl, nr, err := c.readStream(ctx, x, resp.Body, id, a)
	if err != nil {
		return "", 0, c.bodyError(what, err)
	}
	if nl == last {
		nl = "" // no progress: do not resume again
	}
	return nl, nr, nil
}

// dispatch acts on one message from the server: the awaited reply (done),
// a request (answered with a POST), a notification or another response
// (recorded only).
func (c *httpClient) dispatch(data []byte, id json.RawMessage) (*mcp.Message, bool) {
	// a copy: data may be the SSE parser's buffer, and the deriver holds
	// messages until the session header is known
	data = append([]byte(nil), bytes.TrimRight(data, " \t\r\n")...)
	if _, err := c.o.Messages.Record(cassette.S2C, data, false); err != nil {
		c.o.Warn(fmt.Sprintf("record a server message: %v", err))
		return nil, false
	}
	m, err := mcp.Parse(data)
	if mcp.IsAmbiguous(err) && m.Kind == mcp.KindResponse {
		c.o.Warn(fmt.Sprintf("server response %s is ambiguous (kept in the cassette): %v", m.ID, err))
	} else if err != nil {
		c.o.Warn(fmt.Sprintf("server sent a message that is not JSON-RPC (kept in the cassette): %v: %s", err, preview(data)))
		return nil, false
	}
	switch m.Kind {
	case mcp.KindResponse:
		if id != nil && mcp.IDKey(m.ID) == mcp.IDKey(id) {
			return m, true
		}
		c.o.Warn(fmt.Sprintf("server sent a response with id %s (%s) that matches no pending request; ids are matched by exact token and type", orNone(m.ID), mcp.IDType(m.ID)))
	case mcp.KindRequest:
		c.answer(m)
	}
	return nil, false
}

// answer answers a server request with a POST: the scripted answer, ping's
// empty result, or "method not found".
func (c *httpClient) answer(m *mcp.Message) {
	// an answer's POST may itself be answered with a stream carrying a
	// request: bound the nesting a hostile server could make of that
	if c.depth.Add(1) > maxAnswerDepth {
		c.depth.Add(-1)
		c.o.Warn(fmt.Sprintf("the server's %s request came while %d answers were open; not answered", m.Method, maxAnswerDepth))
		return
	}
	defer c.depth.Add(-1)
	var body []byte
	if c.o.Answer != nil {
		if res, errObj, ok := c.o.Answer(m.Method, m.Params); ok {
			if errObj != nil {
				body = errorAnswer(m.ID, errObj)
			} else {
				body = mcp.Result(m.ID, res)
			}
		}
	}
	if body == nil {
		if m.Method == mcp.MethodPing {
			body = mcp.Result(m.ID, json.RawMessage(`{}`))
		} else {
			body = mcp.ErrorResponse(m.ID, mcp.CodeMethodNotFound, "method not found: "+m.Method)
		}
	}
	if err := c.send("the answer to "+m.Method, body); err != nil {
		c.o.Warn(fmt.Sprintf("answer the server's %s request: %v", m.Method, err))
	}
}

// Initialize performs the handshake: initialize with the pinned protocol
// version (the answer may set Mcp-Session-Id), check the answered version,
// then notifications/initialized with MCP-Protocol-Version, then open the
// GET stream for the server's own messages when the server offers one.
func (c *httpClient) Initialize() (json.RawMessage, error) {
	var caps any = map[string]any{}
	if c.o.Capabilities != nil {
		caps = c.o.Capabilities
	}
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": c.o.Protocol,
		"capabilities":    caps,
		"clientInfo":      map[string]string{"name": "witness", "version": version.Version},
	})
	m, err := c.Request(mcp.MethodInitialize, params)
	if err != nil {
		return nil, err
	}
	proto, err := checkInitialize(m, c.o.Protocol)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.InitializeResult, c.Protocol, c.protoHdr = m.Result, proto, proto
	c.mu.Unlock()
	if err := c.notify(mcp.NotificationInitialized, nil); err != nil {
		return nil, err
	}
	c.openStream()
	return m.Result, nil
}

// checkInitialize checks an initialize answer: a result whose protocol
// version the witness speaks.
func checkInitialize(m *mcp.Message, asked string) (string, error) {
	if m.Error != nil {
		se := serverError(mcp.MethodInitialize, m.Error)
		return "", exitcode.New(exitcode.Failure, fmt.Errorf("server rejected initialize: %w", se), "try another --protocol: "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return "", exitcode.New(exitcode.Failure, fmt.Errorf("initialize result is not an object: %w", err), "")
	}
	if !mcp.Supported(res.ProtocolVersion) {
		return "", exitcode.New(exitcode.Failure,
			fmt.Errorf("server answered initialize with protocol version %q, which witness does not support (it asked for %s); disconnected", res.ProtocolVersion, asked),
			"witness speaks "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	return res.ProtocolVersion, nil
}

// openStream GETs the server's stream for its own requests and
// notifications; a server that offers none answers 405 (any other refusal
// is noted and the session goes on without one). It returns once the
// answer's head came (at most streamWait): a server sends what is not tied
// to a request on that stream only once it is open, and drops it before,
// so the scripted requests wait for it (the conformance suite's
// elicitation scenario sends its request so).
func (c *httpClient) openStream() {
	ctx, cancel := context.WithCancel(context.Background())
	h := c.headers("text/event-stream")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.u.String(), nil)
	if err != nil {
		cancel()
		return
	}
	req.Header = h
	x, err := c.rec.Request(req, nil)
	if err != nil {
		cancel()
		return
	}
	// the stream's head may come only with its first event: wait for it
	// at most the request timeout, in the background
	done := make(chan struct{})
	head := make(chan struct{})
	var headOnce sync.Once
	headed := func() { headOnce.Do(func() { close(head) }) }
	defer func() {
		select {
		case <-head:
		case <-time.After(streamWait):
		}
	}()
	stop := &bodyStop{}
	c.mu.Lock()
	c.getCancel = func() {
		stop.set("closed by witness at the end of the session")
		cancel()
	}
	c.getDone = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		defer headed()
		resp, err := c.do(req)
		if err != nil {
			why := stop.get()
			if why == "" {
				why = err.Error()
				c.o.Warn(fmt.Sprintf("GET stream: %v; going on without one", err))
			}
			c.rec.Fail(x, why)
			return
		}
		if err := c.rec.Response(x, resp); err != nil {
			resp.Body.Close()
			return
		}
		headed()
		if resp.StatusCode != http.StatusOK || bodyKind(resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")) != "sse" {
			c.rec.ReadBody(x, resp.Body, maxErrorBody, nil)
			if resp.StatusCode != http.StatusMethodNotAllowed {
				c.o.Warn(fmt.Sprintf("the server answered the GET stream with HTTP %s (%s); going on without one", resp.Status, resp.Header.Get("Content-Type")))
			}
			return
		}
		p := modelapi.NewSSEParser(c.o.MaxMessage, func(e modelapi.SSEEvent) {
			if messageEvent(e) {
				c.dispatch(e.Data, nil)
			}
		}, func(n, size int) {
			c.o.Warn(fmt.Sprintf("GET stream: event %d is over %s; skipped (kept in the cassette)", n, mcp.FormatSize(c.o.MaxMessage)))
		})
		c.rec.readBody(x, resp.Body, -1, func(b []byte) bool { p.Feed(b); return true }, stop)
	}()
}

// CallTool calls a tool with the given arguments (a JSON object, or nil).
func (c *httpClient) CallTool(name string, args json.RawMessage) (*mcp.Message, error) {
	return callTool(c, name, args)
}

// ListTools follows nextCursor through every page of tools/list.
func (c *httpClient) ListTools() ([]json.RawMessage, error) { return listTools(c) }

// Close ends the session: it closes the GET stream and sends DELETE with
// the session id (a server may answer 405: it does not let clients end
// sessions).
func (c *httpClient) Close() Shutdown {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Shutdown{Step: "closed"}
	}
	c.closed = true
	cancel, done, sid := c.getCancel, c.getDone, c.session
	c.mu.Unlock()
	sd := Shutdown{Step: "no session id", Status: "no DELETE sent"}
	if cancel != nil {
		cancel()
		<-done
	}
	if sid == "" {
		return sd
	}
	sd.Step = "DELETE"
	ctx, stop := context.WithTimeout(context.Background(), c.o.Timeout)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.u.String(), nil)
	if err != nil {
		sd.Warning = err.Error()
		return sd
	}
	req.Header = c.headers("application/json, text/event-stream")
	x, err := c.rec.Request(req, nil)
	if err != nil {
		sd.Err = err
		return sd
	}
	resp, err := c.do(req)
	if err != nil {
		c.rec.Fail(x, err.Error())
		sd.Warning = fmt.Sprintf("DELETE of session %s: %v", sid, err)
		return sd
	}
	c.rec.Response(x, resp)
	c.rec.ReadBody(x, resp.Body, maxErrorBody, nil)
	sd.Status = "HTTP " + resp.Status
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
		sd.Warning = fmt.Sprintf("the server answered the DELETE of session %s with HTTP %s", sid, resp.Status)
	}
	return sd
}

// bodyKind says how an answer's body carries messages: "json", "sse", or
// "" (none: another media type, or a content coding the witness did not
// ask for and does not undo).
func bodyKind(contentType, contentEncoding string) string {
	if ce := strings.TrimSpace(contentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	switch mt {
	case "application/json":
		return "json"
	case "text/event-stream":
		return "sse"
	}
	return ""
}

// messageEvent reports whether an SSE event carries a JSON-RPC message: an
// event of type message (the default) with data; a priming event (an id
// and empty data) carries none.
func messageEvent(e modelapi.SSEEvent) bool {
	return (e.Type == "" || e.Type == "message") && len(bytes.TrimSpace(e.Data)) > 0
}
