package httpproxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/keyring"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const testKeyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// hmacVerifier verifies the legacy HMAC signer of the tests.
type hmacVerifier struct{ key []byte }

func (v hmacVerifier) Verify(keyID, alg string, msg []byte, sig string) error {
	m := hmac.New(sha256.New, v.key)
	m.Write(msg)
	if hex.EncodeToString(m.Sum(nil)) != sig {
		return fmt.Errorf("bad signature")
	}
	return nil
}

// session is a proxy running in the test.
type session struct {
	t    testing.TB
	URL  string
	Dir  string
	sigs chan os.Signal
	done chan struct{}
	res  *Result
	err  error
	errw *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProxy runs Run in front of upstream with o's other fields; it is
// stopped with SIGTERM at the end of the test unless stopped before.
func startProxy(t testing.TB, upstream string, o Options) *session {
	t.Helper()
	s := &session{t: t, Dir: t.TempDir(), sigs: make(chan os.Signal, 1), done: make(chan struct{}), errw: &syncBuffer{}}
	ready := make(chan string, 1)
	o.Upstream = upstream
	o.OutDir = s.Dir
	o.Listen = httplocal.DefaultListen
	o.Signals = s.sigs
	o.Stderr = s.errw
	o.Ready = func(u string) { ready <- u }
	if o.Getenv == nil {
		o.Getenv = func(k string) string {
			if k == eventlog.EnvTS {
				return "2026-08-30T14:33:00+00:00"
			}
			return ""
		}
	}
	if o.Signers == nil {
		sg, err := keyring.LegacySigner(testKeyHex)
		if err != nil {
			t.Fatal(err)
		}
		o.Signers = []eventlog.Signer{sg}
	}
	go func() {
		defer close(s.done)
		s.res, s.err = Run(context.Background(), o)
	}()
	select {
	case s.URL = <-ready:
	case <-s.done:
		t.Fatalf("proxy did not start: %v", s.err)
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// stop ends the session with SIGTERM and waits for it.
func (s *session) stop() (*Result, error) {
	select {
	case <-s.done:
	default:
		s.sigs <- syscall.SIGTERM
		<-s.done
	}
	return s.res, s.err
}

// cassette reads the session's cassette.
func (s *session) cassette() (cassette.HTTPFileHeader, []*cassette.HTTPExchange, []byte) {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, derive.CassetteFile))
	if err != nil {
		s.t.Fatal(err)
	}
	h, xs, err := cassette.ReadHTTPExchanges(bytes.NewReader(data), "cassette.jsonl", -1)
	if err != nil {
		s.t.Fatalf("%v\n%s", err, data)
	}
	return h, xs, data
}

// verifyEvents checks the event log with the test key and returns it.
func (s *session) verifyEvents() (*eventlog.LogReport, []byte) {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, derive.EventsFile))
	if err != nil {
		s.t.Fatal(err)
	}
	key, _ := hex.DecodeString(testKeyHex)
	rep, err := eventlog.VerifyLog(bytes.NewReader(data), "events.jsonl", eventlog.VerifyLogOptions{Verifier: hmacVerifier{key}})
	if rep == nil {
		s.t.Fatal(err)
	}
	return rep, data
}

// verified reports whether the log verified, and why not.
func verified(rep *eventlog.LogReport) (bool, string) {
	if err := rep.Err(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// post sends body to the proxy and returns the response and its body.
func post(t *testing.T, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       2 * time.Minute,
}

// keepOnFailure copies dir (a session's --out) to $WITNESS_TEST_KEEP when
// the test fails and that variable names a directory: the evidence of a
// run that failed under load, for a look afterwards. Registered after
// t.TempDir, it runs before the temporary directory is removed.
func keepOnFailure(t testing.TB, dir string) {
	t.Cleanup(func() {
		keep := os.Getenv("WITNESS_TEST_KEEP")
		if !t.Failed() || keep == "" {
			return
		}
		dst, err := os.MkdirTemp(keep, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-")
		if err == nil {
			err = os.CopyFS(dst, os.DirFS(dir))
		}
		if err != nil {
			t.Logf("keep the evidence of %s: %v", dir, err)
			return
		}
		t.Logf("the evidence of the failed run is in %s", dst)
	})
}
