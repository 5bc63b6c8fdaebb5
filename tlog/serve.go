package tlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// maxEntry bounds an entry sent to the append endpoint.
const maxEntry = 64 << 10

// maxAnswer bounds the body of a log's answer read over HTTP: the largest
// is a full entry bundle, 256 entries of at most 64 KiB, each after its
// 2-byte length. A log key or a bundle is far smaller.
const maxAnswer = layout.EntryBundleWidth * (maxEntry + 2)

// DefaultTimeout bounds one exchange with a log or a witness over HTTP,
// from the request to the answer's last byte (Reader's timeout when 0).
const DefaultTimeout = httpbound.DefaultTimeout

// readTotal bounds the time of all the reads of one Reader of a URL
// together (summed, each from its request to its answer's end): a log
// that answers each read in time but never runs out of entries to be
// read (a checkpoint claiming a huge size) ends too.
const readTotal = 15 * time.Minute

// anchorTimeout bounds POST /add, which waits for the log's witnesses.
const anchorTimeout = 60 * time.Second

// remoteClient is the client of every read of a log or a witness: each
// answer bounded by maxBody bytes and timeout (0: DefaultTimeout), its
// errors naming the URL and the bound (httpbound.Unwrap).
func remoteClient(timeout, total time.Duration, maxBody int64) *http.Client {
	return httpbound.NewClient(httpbound.ClientOptions{Timeout: timeout, Total: total, MaxBody: maxBody})
}

// Handler serves the log: POST /add (an entry's canonical JSON; the answer
// is its bundle), GET /log-key (the verifier key), and the tlog-tiles read
// API (/checkpoint, /tile/...) from the log's reader, whatever the driver.
func Handler(l *Log, logf func(format string, args ...any)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add", func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(io.LimitReader(r.Body, maxEntry+1))
		if err != nil || len(data) > maxEntry {
			http.Error(w, "entry too large or unreadable", http.StatusBadRequest)
			return
		}
		e, err := bundle.ParseEntry(data, "entry")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, warnings, err := l.Anchor(r.Context(), e)
		if err != nil {
			logf("append failed: %v", err)
			http.Error(w, "append failed", http.StatusServiceUnavailable)
			return
		}
		for _, wn := range warnings {
			logf("%s", wn)
			w.Header().Add("Witness-Warning", wn)
		}
		out, err := b.Marshal()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		logf("appended session %s count %d at index %d", e.Session, e.Count, b.Index)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	mux.HandleFunc("GET /log-key", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, l.logKey)
	})
	mux.HandleFunc("GET /checkpoint", func(w http.ResponseWriter, r *http.Request) {
		cp, err := l.reader.ReadCheckpoint(r.Context())
		serveRead(w, cp, err)
	})
	mux.HandleFunc("GET /tile/", func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, "/tile/")
		if idx, ok := strings.CutPrefix(rest, "entries/"); ok {
			i, p, err := layout.ParseTileIndexPartial(idx)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			data, err := l.reader.ReadEntryBundle(r.Context(), i, p)
			serveRead(w, data, err)
			return
		}
		level, idx, ok := strings.Cut(rest, "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		lv, i, p, err := layout.ParseTileLevelIndexPartial(level, idx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, err := l.reader.ReadTile(r.Context(), lv, i, p)
		serveRead(w, data, err)
	})
	return mux
}

func serveRead(w http.ResponseWriter, data []byte, err error) {
	switch {
	case errors.Is(err, os.ErrNotExist):
		http.Error(w, "not found", http.StatusNotFound)
	case err != nil:
		http.Error(w, "read failed", http.StatusInternalServerError)
	default:
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(data)
	}
}

// IsURL says whether a --log value names a served log rather than a folder.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// AnchorRemote sends entry to the log served at base (POST /add) and
// returns the bundle it answers, verified against the log key the server
// gives, or pinned (logKey, when not "").
func AnchorRemote(ctx context.Context, base string, e bundle.Entry, logKey string) (*bundle.Bundle, error) {
	data, err := e.Marshal()
	if err != nil {
		return nil, err
	}
	hc := remoteClient(anchorTimeout, 0, 1<<20)
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/add", strings.NewReader(string(data)))
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--log %s: %w", base, err), "")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: %w", base, httpbound.Unwrap(err)), "check that 'witness log serve' runs there")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: %w", base, err), "")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: the log answered %s: %s", base, resp.Status, strings.TrimSpace(string(body))), "")
	}
	b, err := bundle.Parse(body, base+"/add")
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, err, "")
	}
	if b.Entry != e {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: the bundle holds another entry", base), "")
	}
	if _, err := b.Verify(logKey); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: the bundle it answered: %w", base, err), "")
	}
	return b, nil
}

// Reader opens read access to a log folder or URL, and returns its
// verifier key (from the folder's configuration or the server's /log-key).
// Every exchange with a URL is bounded by timeout (0: DefaultTimeout) and
// MaxAnswer bytes, and all of them together by ReadTotal; one past either is an error that names the URL and the
// bound, with exit code Failure where Reader returns it (verify wraps the
// later reads' errors so).
func Reader(ctx context.Context, target string, timeout time.Duration) (bundle.Log, string, error) {
	if IsURL(target) {
		u, err := url.Parse(strings.TrimSuffix(target, "/") + "/")
		if err != nil {
			return nil, "", exitcode.New(exitcode.Usage, fmt.Errorf("--log %s: %w", target, err), "")
		}
		hc := remoteClient(timeout, readTotal, maxAnswer)
		f := httpTiles{root: u.String(), hc: hc}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"log-key", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: %w", target, httpbound.Unwrap(err)), "check that 'witness log serve' runs there, or raise --log-timeout")
		}
		defer resp.Body.Close()
		key, err := io.ReadAll(io.LimitReader(resp.Body, 4097))
		switch {
		case err != nil:
			return nil, "", exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: %w", target, err), "check that 'witness log serve' runs there, or raise --log-timeout")
		case resp.StatusCode != http.StatusOK:
			return nil, "", exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: /log-key answered %s", target, resp.Status), "")
		case len(key) > 4096:
			return nil, "", exitcode.New(exitcode.Failure, fmt.Errorf("--log %s: /log-key answered more than 4096 bytes, not a verifier key", target), "")
		}
		return newTiles(f), strings.TrimSpace(string(key)), nil
	}
	cfg, err := ReadConfig(target)
	if err != nil {
		return nil, "", err
	}
	return newTiles(client.FileFetcher{Root: target}), cfg.LogKey, nil
}
