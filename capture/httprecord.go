package capture

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"io"
	"net/http"
	"sync"
)

// maxRedactLine is the longest body line held back for redaction, as in
// the HTTP proxy: with body rules, bodies are recorded at line ends so
// that a JSON body or an SSE data line is redacted whole; a longer line is
// recorded in pieces of this size.
const maxRedactLine = 16 << 20

// chunkSize is the largest chunk read at once from a body.
const httpChunk = 32 << 10

// httpRecorder records the exchanges of the HTTP capture client into an
// HTTP cassette: heads with credential headers replaced by keyed hashes,
// bodies chunk by chunk (redacted by the body rules, line by line), each
// chunk before the client acts on its bytes.
type httpRecorder struct {
	w      *cassette.HTTPWriter
	secret map[string]bool // header names
	params map[string]bool // query parameter names
	hash   func([]byte) string
	body   *derive.Redactor // body rules; nil: none
}

// headerKey returns the redactor whose keyed hash replaces credential
// headers and its key id for the cassette header: body's key when body
// rules are given, else key (--redact-key, $WITNESS_REDACT_KEY), else a
// random key made for this session alone (its id starts with "session:",
// docs/formats/http-cassette.md).
func headerKey(body *derive.Redactor, key []byte) (*derive.Redactor, string, error) {
	if body != nil {
		return body, body.Info().KeyID, nil
	}
	session := key == nil
	if session {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, "", exitcode.New(exitcode.Failure, fmt.Errorf("make a session key for header hashes: %w", err), "")
		}
	}
	r, err := derive.NewRedactor(nil, key)
	if err != nil {
		return nil, "", exitcode.New(exitcode.Usage, err, "")
	}
	id := r.Info().KeyID
	if session {
		id = "session:" + id
	}
	return r, id, nil
}

// newHTTPRecorder writes the cassette header h to out (its HeaderKey and
// RedactedHeaders are set here from hashKey, keyID and extra header names)
// and returns the recorder. body holds the body rules (nil: none); extra
// names more headers to hash, extraParams more query parameters
// (cassette.CredentialParams are always hashed). h.Upstream is written
// with its credential query values hashed.
func newHTTPRecorder(out io.Writer, h cassette.HTTPFileHeader, hashKey *derive.Redactor, keyID string, body *derive.Redactor, extra, extraParams []string) (*httpRecorder, error) {
	r := &httpRecorder{hash: hashKey.Token, body: body}
	r.secret, h.RedactedHeaders = cassette.NameSet(cassette.CredentialHeaders, extra)
	r.params, h.RedactedQuery = cassette.NameSet(cassette.CredentialParams, extraParams)
	h.HeaderKey = keyID
	h.Upstream, _ = r.URI(h.Upstream)
	w, err := cassette.NewHTTPWriter(out, h)
	if err != nil {
		return nil, err
	}
	r.w = w
	return r, nil
}

// URI returns a request target or URL as it may be written: credential
// query values replaced by keyed hashes, and whether any was.
func (r *httpRecorder) URI(s string) (string, bool) {
	return cassette.RedactQuery(s, r.params, r.hash)
}

// Writer returns the cassette writer (its OnRecord hook feeds the events).
func (r *httpRecorder) Writer() *cassette.HTTPWriter { return r.w }

func (r *httpRecorder) failed(err error) error {
	return exitcode.New(exitcode.Failure, fmt.Errorf("record the exchange: %w", err), "the cassette could not be written; nothing more is sent")
}

// Request records a request head and its whole body (nil: none) and
// returns the exchange number.
func (r *httpRecorder) Request(req *http.Request, body []byte) (int64, error) {
	path, red := r.URI(req.URL.RequestURI())
	x, err := r.w.Request(cassette.HTTPRecord{Method: req.Method, Path: path, Host: req.URL.Host, Proto: req.Proto,
		Header: cassette.HeaderFields(req.Header, r.secret, r.hash), Redacted: red})
	if err != nil {
		return 0, r.failed(err)
	}
	if len(body) > 0 {
		data, red := derive.RedactBodyLines(r.body, body)
		if err := r.w.Body(x, false, data, red, int64(len(body))); err != nil {
			return 0, r.failed(err)
		}
	}
	if err := r.w.End(x, false, ""); err != nil {
		return 0, r.failed(err)
	}
	return x, nil
}

// Response records a response head.
func (r *httpRecorder) Response(x int64, resp *http.Response) error {
	if err := r.w.Response(x, resp.StatusCode, resp.Proto, cassette.HeaderFields(resp.Header, r.secret, r.hash)); err != nil {
		return r.failed(err)
	}
	return nil
}

// Fail records that exchange x got no answer.
func (r *httpRecorder) Fail(x int64, detail string) { _ = r.w.Fail(x, detail, 0) }

// bodyStop is why the client closed a body it was reading, set before it
// closes it, so that the end record says so instead of naming the read
// error the close caused.
type bodyStop struct {
	mu  sync.Mutex
	why string
}

func (s *bodyStop) set(why string) {
	s.mu.Lock()
	if s.why == "" {
		s.why = why
	}
	s.mu.Unlock()
}

func (s *bodyStop) get() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

func (s *bodyStop) close(body io.Closer, why string) {
	s.set(why)
	body.Close()
}

// ReadBody reads a response body to its end, recording it, and returns it
// (max bytes at most; beyond them the body is closed, the end records the
// cut and the error says so).
func (r *httpRecorder) ReadBody(x int64, body io.ReadCloser, max int, consume func([]byte) bool) ([]byte, error) {
	return r.readBody(x, body, max, consume, nil)
}

// readBody reads body, records every chunk (cut at line ends when body
// rules apply) and then hands the wire bytes to consume, or, when consume
// is nil, keeps them (up to max, < 0: no limit) and returns them. consume
// returning false stops the reading. The end record carries why the body
// ended early: over max, a read error, or stop's reason.
func (r *httpRecorder) readBody(x int64, body io.ReadCloser, max int, consume func([]byte) bool, stop *bodyStop) ([]byte, error) {
	defer body.Close()
	var kept, pend []byte
	var n int
	var rerr error
	detail := ""
	emit := func(raw []byte) bool {
		data, red := derive.RedactBodyLines(r.body, raw)
		if err := r.w.Body(x, true, data, red, int64(len(raw))); err != nil {
			rerr = r.failed(err)
			return false
		}
		if consume != nil {
			return consume(raw)
		}
		kept = append(kept, raw...)
		return true
	}
	buf := make([]byte, httpChunk)
	for {
		k, err := body.Read(buf)
		if k > 0 {
			n += k
			if max >= 0 && n > max {
				detail = fmt.Sprintf("cut off by witness: the body is over the limit of %d bytes", max)
				rerr = exitcode.New(exitcode.Failure, fmt.Errorf("the server's answer is over the limit of %d bytes", max),
					"raise --max-line if the server is expected to send larger messages; what was received is in the cassette")
				k -= n - max
				n = max
			}
			if r.body == nil {
				if !emit(append([]byte(nil), buf[:k]...)) && rerr == nil {
					detail = stoppedWhy(stop)
					break
				}
			} else {
				pend = append(pend, buf[:k]...)
				cut := bytes.LastIndexByte(pend, '\n') + 1
				if cut == 0 && len(pend) >= maxRedactLine {
					cut = len(pend)
				}
				if cut > 0 {
					ok := emit(append([]byte(nil), pend[:cut]...))
					pend = append(pend[:0], pend[cut:]...)
					if !ok && rerr == nil {
						detail = stoppedWhy(stop)
						break
					}
				}
			}
			if rerr != nil {
				break
			}
		}
		if err != nil {
			if len(pend) > 0 {
				emit(pend)
				pend = nil
			}
			if !errors.Is(err, io.EOF) {
				if why := stop.get(); why != "" {
					detail = why
				} else {
					detail = "cut off: " + err.Error()
					rerr = err
				}
			}
			break
		}
	}
	if len(pend) > 0 {
		emit(pend)
	}
	if why := stop.get(); why != "" && detail == "" {
		detail = why
	}
	if err := r.w.End(x, true, detail); err != nil && rerr == nil {
		rerr = r.failed(err)
	}
	return kept, rerr
}

func stoppedWhy(stop *bodyStop) string {
	if why := stop.get(); why != "" {
		return why
	}
	return "closed by witness"
}
