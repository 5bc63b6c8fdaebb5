package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/serve"
)

// CassetteKind reads the first line of the cassette at path and returns
// its format: cassette.Format (stdio) or cassette.HTTPFormat. A file that
// cannot be opened is a usage error naming --cassette; one that is not a
// cassette is invalid evidence (exit code Tampered).
func CassetteKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", exitcode.Input("read cassette", err, "check the path given to --cassette")
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, cassette.MaxRecordBytes), 64<<10).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", exitcode.New(exitcode.Failure, fmt.Errorf("read cassette %s: %w", path, err), "")
	}
	kind, kerr := cassette.Kind(line, path)
	if kerr != nil {
		return "", exitcode.New(exitcode.Tampered, kerr, "serve reads cassettes written by 'witness proxy' or 'witness capture'")
	}
	return kind, nil
}

// Matcher says what a request is matched on: method, path (with its
// query) and the body, JSON bodies in canonical form without the Ignore
// paths (volatile fields), other bodies as their exact bytes. Headers are
// never matched: they carry credentials and SDK versions.
type Matcher struct {
	Ignore []jsonpath.Path
	// Params are the query parameters matched without their values
	// (credentials: cassette.CredentialParams when nil; LoadReplay adds
	// the cassette's redacted_query).
	Params map[string]bool
}

// ParseIgnore parses --ignore-field values: a JSON path of the one dialect
// (docs/formats/json-path.md), or a bare member name, which means that
// member at the top of the body ("stream_options" is "$.stream_options").
func ParseIgnore(fields []string) (Matcher, error) {
	var m Matcher
	for _, f := range fields {
		s := strings.TrimSpace(f)
		if !strings.HasPrefix(s, "$") {
			s = jsonpath.Member("$", s)
		}
		p, err := jsonpath.Parse(s)
		if err != nil {
			return m, exitcode.New(exitcode.Usage, fmt.Errorf("--ignore-field %q: %w", f, err), "give a member name (stream_options) or a JSON path ($.metadata.request_id, $..id)")
		}
		if len(p.Steps) == 0 {
			return m, exitcode.New(exitcode.Usage, fmt.Errorf("--ignore-field %q selects the whole body", f), "name a member of the body")
		}
		m.Ignore = append(m.Ignore, p)
	}
	return m, nil
}

// key is what a request is matched on.
type key struct {
	Method, Path string
	Body         string // canonical JSON (volatile fields removed), or the exact bytes
	JSON         bool   // Body is canonical JSON
}

// String shows the key for a miss report.
func (k key) String() string { return k.Method + " " + k.Path }

// text is the key as lines, for the diff of a miss.
func (k key) text() string {
	body := k.Body
	if k.JSON {
		if ind, err := canon.Indent([]byte(k.Body)); err == nil {
			body = strings.TrimRight(string(ind), "\n")
		}
	} else if body != "" {
		body = fmt.Sprintf("%q", body)
	}
	return k.Method + " " + k.Path + "\n" + body
}

// keyOf returns the match key of a request.
func (m Matcher) keyOf(method, path string, body []byte) key {
	params := m.Params
	if params == nil {
		params, _ = cassette.NameSet(cassette.CredentialParams, nil)
	}
	k := key{Method: method, Path: cassette.MaskQuery(path, params), Body: string(body)}
	if len(bytes.TrimSpace(body)) == 0 {
		k.Body = ""
		return k
	}
	v, err := jsontree.Parse(body, "body")
	if err != nil {
		return k
	}
	for _, p := range m.Ignore {
		remove(v, p)
	}
	raw, err := v.AppendCompact(nil)
	if err != nil {
		return k
	}
	c, err := canon.Transform(raw)
	if err != nil {
		return k
	}
	k.Body, k.JSON = string(c), true
	return k
}

// remove deletes what p selects from v: members of objects, elements of
// arrays.
func remove(v *jsontree.Value, p jsonpath.Path) {
	last := p.Steps[len(p.Steps)-1]
	parents := []*jsontree.Value{v}
	if len(p.Steps) > 1 {
		parents = v.Select(jsonpath.Path{Steps: p.Steps[:len(p.Steps)-1]})
	}
	drop := func(n *jsontree.Value) {
		switch n.Kind {
		case jsontree.Object:
			kept := n.Obj[:0]
			for _, mb := range n.Obj {
				if !last.Wildcard && !(mb.Key == last.Name && !last.IsIndex) {
					kept = append(kept, mb)
				}
			}
			n.Obj = kept
		case jsontree.Array:
			if last.Wildcard {
				n.Arr = nil
			} else if last.IsIndex && last.Index < len(n.Arr) {
				n.Arr = append(n.Arr[:last.Index:last.Index], n.Arr[last.Index+1:]...)
			}
		}
	}
	for _, n := range parents {
		if last.Descend {
			n.Walk(drop)
		} else {
			drop(n)
		}
	}
}

// entry is one recorded exchange ready to replay.
type entry struct {
	x    *cassette.HTTPExchange
	key  key
	used bool
}

// Replay is an HTTP cassette prepared for serving.
type Replay struct {
	Name     string
	Header   cassette.HTTPFileHeader
	matcher  Matcher
	mu       sync.Mutex
	byKey    map[key][]*entry
	all      []*entry
	redacted bool
	sha256   string // hex, of the cassette file's bytes
}

// LoadReplay reads the HTTP cassette at path and prepares it for serving
// with the matcher m. An invalid cassette is Tampered.
func LoadReplay(path string, m Matcher) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read cassette", err, "check the path given to --cassette")
	}
	defer f.Close()
	sum := sha256.New()
	r := io.TeeReader(f, sum)
	h, xs, err := cassette.ReadHTTPExchanges(r, path, -1)
	if err != nil {
		return nil, exitcode.New(exitcode.Tampered, err, "serve --listen reads cassettes written by 'witness proxy --listen'")
	}
	if _, err := io.Copy(sum, f); err != nil { // the digest covers the whole file, whatever the reader left
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read cassette %s: %w", path, err), "")
	}
	m.Params, _ = cassette.NameSet(cassette.CredentialParams, h.RedactedQuery)
	s := &Replay{Name: path, Header: h, matcher: m, byKey: map[key][]*entry{}, redacted: len(h.Redaction) > 0, sha256: hex.EncodeToString(sum.Sum(nil))}
	for _, x := range xs {
		if x.Request.Redacted() || (x.Response != nil && x.Response.Redacted()) {
			s.redacted = true
		}
		e := &entry{x: x, key: m.keyOf(x.Request.Method, x.Request.Path, x.Request.Body())}
		s.byKey[e.key] = append(s.byKey[e.key], e)
		s.all = append(s.all, e)
	}
	return s, nil
}

// Redacted reports whether bodies were redacted before they were
// recorded: the answers are then not what the upstream said.
func (s *Replay) Redacted() bool { return s.redacted }

// ServeOptions configure Replay.Serve.
type ServeOptions struct {
	Listen   string       // default httplocal.DefaultListen; a host-less ":PORT" is loopback
	Listener net.Listener // used instead of Listen when set
	Stderr   io.Writer
	Signals  <-chan os.Signal
	// ExitAfter stops serving once that many requests were answered (0:
	// until a signal).
	ExitAfter int
	// Pace replays the recorded time between chunks (off: as fast as
	// the client reads; a frozen cassette has no times).
	Pace bool
	// RequireAll makes recorded exchanges never asked for an error too.
	RequireAll bool
	Ready      func(url string)
	// AllowOrigins are the browser origins let in besides loopback ones
	// (httplocal.CheckOrigin).
	AllowOrigins []string
	// Report, when set, receives a drift report (docs/formats/drift-report.md):
	// the header once listening, one entry per request as it is answered
	// (matched, or missed with the nearest recording and the diff), the
	// recorded exchanges never asked for and the end record when serving
	// stops. A report that cannot be written makes Serve fail (exit 5).
	Report io.Writer
	// AllowRedacted is recorded in the report header (--allow-redacted).
	AllowRedacted bool
	// MaxConns caps the connections open at once (0:
	// httpbound.DefaultMaxConns), as Options.MaxConns.
	MaxConns int
}

// ServeResult says how a serve session went.
type ServeResult struct {
	URL    string
	Served int // requests answered from the cassette
	Misses int // requests the cassette had no answer for
	Unused int // recorded exchanges never asked for
}

// Serve answers HTTP requests from the cassette until a signal or
// o.ExitAfter requests. A miss is answered 400 with an error body in the
// API's shape and explained on o.Stderr (the nearest recorded request and
// a diff); the returned error then carries exit code Incomplete.
func (s *Replay) Serve(o ServeOptions) (*ServeResult, error) {
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = httplocal.Listen(o.Listen); err != nil {
			return nil, err
		}
	}
	defer ln.Close()
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	rs := &replayServer{s: s, o: o, stderr: &lockedWriter{w: stderr}, done: make(chan struct{})}
	srv, ln := httpbound.Server(rs, ln, httpbound.ServerOptions{MaxConns: o.MaxConns, ErrorLog: log.New(rs.stderr, "witness: serve: ", 0)})
	res := &ServeResult{URL: "http://" + ln.Addr().String()}
	if o.Report != nil {
		w, err := drift.NewWriter(o.Report, s.reportHeader(o, ln.Addr().String()))
		if err != nil {
			return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: write the drift report: %w", err), "check the disk and the path given to --report")
		}
		rs.rep = w
	}
	fmt.Fprintf(rs.stderr, "listening on %s\n", res.URL)
	if o.Ready != nil {
		o.Ready(res.URL)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	end := drift.End{Stop: drift.StopExitAfter}
	select {
	case sig := <-o.Signals:
		end = drift.End{Stop: drift.StopSignal, Signal: drift.SignalName(sig)}
	case <-rs.done:
	case err := <-served:
		serveErr = err
		end = drift.End{Stop: drift.StopFailed, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), httplocal.DefaultShutdownGrace)
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	cancel()
	rs.wg.Wait()
	s.mu.Lock()
	res.Served, res.Misses = rs.served, rs.misses
	var unused []*entry
	for _, e := range s.all {
		if !e.used {
			res.Unused++
			unused = append(unused, e)
		}
	}
	s.mu.Unlock()
	if err := rs.finishReport(unused, end); err != nil && serveErr == nil {
		return res, err
	}
	if serveErr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: %w", serveErr), "")
	}
	if res.Unused > 0 {
		fmt.Fprintf(rs.stderr, "witness: serve: %d recorded exchange(s) were not asked for\n", res.Unused)
	}
	if res.Misses > 0 {
		return res, exitcode.New(exitcode.Incomplete, fmt.Errorf("%d request(s) had no recorded answer in %s", res.Misses, s.Name),
			"the agent asked something the recording does not cover: re-record with 'witness proxy --listen', or ignore volatile fields with --ignore-field")
	}
	if o.RequireAll && res.Unused > 0 {
		return res, exitcode.New(exitcode.Incomplete, fmt.Errorf("%d recorded exchange(s) in %s were never asked for", res.Unused, s.Name),
			"the run did less than the recording: drop --require-all, or re-record")
	}
	return res, nil
}

// replayServer is the handler of Replay.Serve.
type replayServer struct {
	s      *Replay
	o      ServeOptions
	stderr *lockedWriter
	wg     sync.WaitGroup
	// rep is the drift report (nil without ServeOptions.Report); it
	// is safe for concurrent handlers.
	rep *drift.Writer

	// under s.mu
	served, misses, answered int
	doneOnce                 sync.Once
	done                     chan struct{}
}

// lockedWriter serialises writes of concurrent handlers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// maxReplayBody bounds a request body read for matching.
const maxReplayBody = 64 << 20

func (rs *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rs.wg.Add(1)
	defer rs.wg.Done()
	if !httplocal.CheckOrigin(r, rs.o.AllowOrigins) {
		httplocal.WriteOriginRefusal(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReplayBody+1))
	if err != nil {
		rs.finish(false)
		return
	}
	if len(body) > maxReplayBody {
		body = body[:maxReplayBody] // cannot match: recorded bodies are whole
	}
	k := rs.s.matcher.keyOf(r.Method, r.RequestURI, body)
	s := rs.s
	s.mu.Lock()
	var hit *entry
	for _, e := range s.byKey[k] {
		if !e.used {
			e.used, hit = true, e
			break
		}
	}
	if hit != nil {
		rs.served++
	} else {
		rs.misses++
	}
	s.mu.Unlock()
	if hit == nil {
		rs.miss(w, r, k)
		rs.finish(true)
		return
	}
	rs.report(drift.Entry{Status: drift.Matched, Kind: drift.KindRequest, Recorded: hit.describe()})
	aborted := rs.answer(w, hit.x)
	rs.finish(true)
	if aborted {
		panic(http.ErrAbortHandler) // replays a cut-off answer as cut off
	}
}

// finish counts an answered request and stops the server after ExitAfter.
func (rs *replayServer) finish(counted bool) {
	if !counted {
		return
	}
	rs.s.mu.Lock()
	rs.answered++
	n := rs.answered
	rs.s.mu.Unlock()
	if rs.o.ExitAfter > 0 && n >= rs.o.ExitAfter {
		rs.doneOnce.Do(func() { close(rs.done) })
	}
}

// answer writes the recorded answer of x, chunk by chunk, flushed; it
// reports whether the recorded answer was cut off (the connection must
// then be aborted).
func (rs *replayServer) answer(w http.ResponseWriter, x *cassette.HTTPExchange) bool {
	if x.Response == nil {
		status := x.Status
		if status == 0 {
			return true // the client went away while recording: nothing was answered
		}
		httplocal.WriteError(w, status, x.Request.Path, "upstream_error", "witness proxy: "+x.Error)
		return false
	}
	resp := x.Response
	hd := http.Header{}
	for _, f := range resp.Header {
		hd.Add(f.Name, f.Value)
	}
	for k, v := range httplocal.EndToEnd(hd) {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	rc := http.NewResponseController(w)
	rc.Flush()
	last := resp.T
	for _, c := range resp.Chunks {
		if rs.o.Pace && c.T > last {
			time.Sleep(time.Duration(c.T - last))
		}
		last = c.T
		if _, err := w.Write(c.Data); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	return !resp.Ended || resp.EndDetail != ""
}

// miss answers a request the cassette has no answer for and explains it.
func (rs *replayServer) miss(w http.ResponseWriter, r *http.Request, k key) {
	msg := fmt.Sprintf("witness serve: the cassette %s has no recorded answer for this %s %s request", rs.s.Name, r.Method, r.URL.Path)
	typ := "invalid_request_error"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Witness-Error", "no_recorded_answer")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(httplocal.ErrorBody(r.URL.Path, typ, msg))

	var out strings.Builder
	fmt.Fprintf(&out, "witness: serve: miss: no recorded answer for %s", k)
	s := rs.s
	s.mu.Lock()
	same := len(s.byKey[k])
	best := s.nearest(k)
	s.mu.Unlock()
	e := drift.Entry{Status: drift.Missed, Kind: drift.KindRequest, Incoming: describeKey(k, 0), Reason: "no recorded answer for this request"}
	switch {
	case same > 0:
		fmt.Fprintf(&out, "\nwitness: serve: it was recorded %d time(s) and asked once more; repeated requests replay in recorded order, once each", same)
		e.Reason = fmt.Sprintf("recorded %d time(s) and asked once more; repeated requests replay in recorded order, once each", same)
		e.Nearest = s.byKey[k][same-1].describe()
	case best == nil:
		out.WriteString("\nwitness: serve: the cassette holds no exchange at all")
		e.Reason = "the cassette holds no exchange at all"
	default:
		diff := serve.LineDiff(best.key.text(), k.text())
		fmt.Fprintf(&out, "\nwitness: serve: nearest recorded request (cassette line %d): %s", best.x.Request.Line, best.key)
		fmt.Fprintf(&out, "\nwitness: serve: diff (-recorded +incoming):\n%s", diff)
		e.Nearest, e.Diff = best.describe(), diff
	}
	out.WriteString("\n")
	io.WriteString(rs.stderr, out.String())
	rs.report(e)
}

// describe returns the drift report message of a recorded exchange.
func (e *entry) describe() *drift.Message { return describeKey(e.key, e.x.Request.Line) }

// describeKey returns the drift report message of a request: its HTTP
// method as method, its path (with the query) as uri, and its body in
// match form as the params (sha256 and preview).
func describeKey(k key, line int64) *drift.Message {
	m := &drift.Message{Line: line, Method: k.Method, URI: drift.Cut(k.Path, drift.MaxPreview)}
	if k.Body != "" {
		sum := sha256.Sum256([]byte(k.Body))
		m.ParamsSHA256 = hex.EncodeToString(sum[:])
		m.Preview = k.Body
		if !k.JSON {
			m.Preview = strconv.Quote(k.Body)
		}
	}
	return m
}

// report writes one entry to the drift report, if there is one; a write
// error sticks in the Writer and is returned when serving stops.
func (rs *replayServer) report(e drift.Entry) {
	if rs.rep != nil {
		rs.rep.Entry(e)
	}
}

// finishReport writes the recorded exchanges never asked for and the end
// record, and returns the exit-5 error of a report that could not be
// written.
func (rs *replayServer) finishReport(unused []*entry, end drift.End) error {
	if rs.rep == nil {
		return nil
	}
	for _, e := range unused {
		rs.report(drift.Entry{Status: drift.NeverAsked, Kind: drift.KindRequest, Recorded: e.describe(), Reason: "recorded, and never asked for in this run"})
	}
	rs.rep.Close(end)
	if err := rs.rep.Err(); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("serve: write the drift report: %w", err), "check the disk and the path given to --report")
	}
	return nil
}

// reportHeader returns the drift report header of a serve of s on addr.
func (s *Replay) reportHeader(o ServeOptions, addr string) drift.Header {
	return drift.Header{
		Cassette: drift.Cassette{Name: s.Name, SHA256: s.sha256},
		Serve:    drift.ServeOptions{Transport: "http", Address: addr, RequireAll: o.RequireAll, AllowRedacted: o.AllowRedacted, AnswerTimeout: "0s"},
		Requests: len(s.all),
	}
}

// nearest picks the recorded request most like k: same method and path
// first, then the fewest differing lines. s.mu is held.
func (s *Replay) nearest(k key) *entry {
	var best *entry
	bestScore := 0
	for i, e := range s.all {
		if i >= 2000 {
			break
		}
		score := 0
		for _, l := range strings.Split(serve.LineDiff(e.key.text(), k.text()), "\n") {
			if strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "- ") {
				score++
			}
		}
		if e.key.Method != k.Method {
			score += 1 << 20
		}
		if strings.SplitN(e.key.Path, "?", 2)[0] != strings.SplitN(k.Path, "?", 2)[0] {
			score += 1 << 19
		}
		if best == nil || score < bestScore {
			best, bestScore = e, score
		}
	}
	return best
}
