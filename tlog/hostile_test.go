package tlog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// TestReaderHostileLog: a log server that never answers, one whose answer
// never ends, and one whose answer's head is huge: the read of its key
// (Reader) or of its checkpoint (what verify --log reads next) fails with
// exit code Failure within the timeout, naming the URL and the bound, in
// bounded memory.
func TestReaderHostileLog(t *testing.T) {
	const timeout = time.Second
	endless := func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	key := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("example.test/log+01234567+AAAA\n")) }
	for _, c := range []struct {
		name     string
		key, cp  http.HandlerFunc
		want     string
		atReader bool
	}{
		{"never answers", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, nil,
			"log-key: no complete answer within the timeout of 1s (awaiting the answer's head)", true},
		{"endless key", endless, nil, "/log-key answered more than 4096 bytes", true},
		{"huge head", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Huge", strings.Repeat("h", 1<<20)) }, nil,
			"log-key: the answer's head passes the limit of 65536 bytes", true},
		{"endless checkpoint", key, endless, "checkpoint: the answer's body passes the limit of 1048576 bytes", false},
		{"silent checkpoint", key, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			"checkpoint: no complete answer within the timeout of 1s", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/log-key", c.key)
			if c.cp != nil {
				mux.HandleFunc("/checkpoint", c.cp)
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			var err error
			peak := memtest.Peak(func() {
				var l bundle.Log
				if l, _, err = Reader(context.Background(), srv.URL, timeout); err == nil {
					_, err = bundle.LookupSession(context.Background(), l, "", "s", 0, nil)
					if err != nil {
						err = exitcode.New(exitcode.Failure, err, "") // as verify wraps it
					}
				}
			})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), srv.URL) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, srv.URL, c.want)
			}
			if c.atReader && exitcode.Of(err) != exitcode.Failure {
				t.Errorf("exit code %d, want %d", exitcode.Of(err), exitcode.Failure)
			}
			t.Logf("%v; peak heap %d MiB", err, peak>>20)
			if peak > 16<<20 {
				t.Errorf("peak heap %d MiB, want under 16 MiB (a checkpoint's bound is 1 MiB)", peak>>20)
			}
		})
	}
}
