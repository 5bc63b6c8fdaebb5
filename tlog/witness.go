package tlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// maxAddCheckpoint bounds an add-checkpoint request body.
const maxAddCheckpoint = 64 << 10

// WitnessOptions configure a Witness.
type WitnessOptions struct {
	Cosigner *Cosigner
	// Logs are the verifier keys of the logs it witnesses; a checkpoint of
	// any other origin is refused (404).
	Logs []string
	// State is the folder where the last size and root of each log are
	// kept, one file per log; it survives restarts.
	State string
	// Now is the cosignature clock (default time.Now).
	Now func() time.Time
}

// Witness is a C2SP tlog-witness: it cosigns a checkpoint only when a
// consistency proof shows it extends the last one it cosigned for that log.
type Witness struct {
	o    WitnessOptions
	keys map[string]string // origin -> verifier key
	mu   sync.Mutex
}

// NewWitness returns a witness.
func NewWitness(o WitnessOptions) (*Witness, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Witness{o: o, keys: map[string]string{}}
	for _, k := range o.Logs {
		name, _, ok := strings.Cut(k, "+")
		if !ok || name == "" {
			return nil, fmt.Errorf("log key %q: want a signed-note verifier key (origin+hash+base64)", k)
		}
		w.keys[name] = k
	}
	if err := os.MkdirAll(o.State, 0o755); err != nil {
		return nil, fmt.Errorf("witness state folder: %w", err)
	}
	return w, nil
}

type witnessState struct {
	Size uint64
	Root []byte
}

func (w *Witness) statePath(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(w.o.State, hex.EncodeToString(sum[:8])+".json")
}

func (w *Witness) load(origin string) (witnessState, error) {
	p := w.statePath(origin)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return witnessState{}, nil
	}
	if err != nil {
		return witnessState{}, err
	}
	root, err := jsontree.Parse(data, p)
	if err != nil {
		return witnessState{}, err
	}
	var perr error
	r := jsontree.NewObjectReader(p, "", root, &perr)
	o := r.String("origin", true)
	size := r.Int("size", true)
	rh, _ := base64.StdEncoding.DecodeString(r.String("root", true))
	r.Done()
	if perr == nil && (o != origin || size < 0) {
		perr = fmt.Errorf("%s: state of another log or a negative size", p)
	}
	return witnessState{Size: uint64(size), Root: rh}, perr
}

func (w *Witness) store(origin string, s witnessState) error {
	data, err := canon.Marshal(map[string]any{"origin": origin, "size": s.Size, "root": base64.StdEncoding.EncodeToString(s.Root)})
	if err != nil {
		return err
	}
	// the state is the witness's own file, replaced on every cosignature
	return atomicfile.Write(w.statePath(origin), append(data, '\n'), atomicfile.Options{Force: true, Flag: "--state"})
}

// witnessError is an add-checkpoint refusal with its HTTP status.
type witnessError struct {
	status int
	size   uint64 // for 409
	msg    string
}

func (e *witnessError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.msg)
}

// addCheckpoint handles one add-checkpoint request body and returns the
// cosignature line, or a *witnessError.
func (w *Witness) addCheckpoint(body []byte) (string, error) {
	head, cpRaw, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return "", &witnessError{status: http.StatusBadRequest, msg: "no blank line before the checkpoint"}
	}
	lines := strings.Split(string(head), "\n")
	oldText, ok := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseUint(oldText, 10, 64)
	if !ok || err != nil || strconv.FormatUint(old, 10) != oldText {
		return "", &witnessError{status: http.StatusBadRequest, msg: "first line is not \"old <size>\""}
	}
	var p [][]byte
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.Strict().DecodeString(l)
		if err != nil || len(h) != 32 {
			return "", &witnessError{status: http.StatusBadRequest, msg: "a proof line is not a base64 hash"}
		}
		p = append(p, h)
	}
	origin, _, _ := strings.Cut(string(cpRaw), "\n")
	key, known := w.keys[origin]
	if !known {
		return "", &witnessError{status: http.StatusNotFound, msg: fmt.Sprintf("unknown log %q", origin)}
	}
	cp, err := bundle.OpenCheckpoint(cpRaw, key)
	if err != nil {
		return "", &witnessError{status: http.StatusForbidden, msg: err.Error()}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st, err := w.load(origin)
	if err != nil {
		return "", &witnessError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	switch {
	case old != st.Size:
		return "", &witnessError{status: http.StatusConflict, size: st.Size, msg: fmt.Sprintf("the witness holds size %d, not %d", st.Size, old)}
	case cp.Size < old:
		return "", &witnessError{status: http.StatusBadRequest, msg: "the checkpoint is smaller than the old size"}
	case old == 0:
		if len(p) != 0 {
			return "", &witnessError{status: http.StatusUnprocessableEntity, msg: "a proof from size 0 must be empty"}
		}
	default:
		// equal sizes need an empty proof and the same root: two
		// checkpoints of one size with different roots are a split view
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old, cp.Size, p, st.Root, cp.Root); err != nil {
			return "", &witnessError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("not a consistent extension of size %d (a fork or split view): %v", old, err)}
		}
	}
	line, err := w.o.Cosigner.cosign(cp.Body, uint64(w.o.Now().Unix()))
	if err != nil {
		return "", &witnessError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	if cp.Size > st.Size || old == 0 {
		if err := w.store(origin, witnessState{Size: cp.Size, Root: cp.Root}); err != nil {
			return "", &witnessError{status: http.StatusInternalServerError, msg: err.Error()}
		}
	}
	return line, nil
}

// ServeHTTP serves POST /add-checkpoint.
func (w *Witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/add-checkpoint" {
		http.NotFound(rw, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(rw, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAddCheckpoint+1))
	if err != nil || len(body) > maxAddCheckpoint {
		http.Error(rw, "request too large or unreadable", http.StatusBadRequest)
		return
	}
	line, err := w.addCheckpoint(body)
	var we *witnessError
	if errors.As(err, &we) {
		if we.status == http.StatusConflict {
			rw.Header().Set("Content-Type", "text/x.tlog.size")
			rw.WriteHeader(we.status)
			fmt.Fprintf(rw, "%d\n", we.size)
			return
		}
		http.Error(rw, we.msg, we.status)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(rw, line)
}

// requestCosignature asks the tlog-witness at base URL to cosign cp, with
// a consistency proof (built from the log's tiles) from the size the
// witness holds. It returns the signature lines.
func requestCosignature(ctx context.Context, base string, cp *bundle.Checkpoint, log bundle.Log) ([]byte, error) {
	hc := remoteClient(DefaultTimeout, 0, maxAddCheckpoint)
	defer hc.CloseIdleConnections()
	old := uint64(0)
	for attempt := 0; attempt < 2; attempt++ {
		var req bytes.Buffer
		fmt.Fprintf(&req, "old %d\n", old)
		if old > 0 && old < cp.Size {
			p, err := log.ConsistencyProof(ctx, old, cp.Size)
			if err != nil {
				return nil, err
			}
			for _, h := range p {
				fmt.Fprintf(&req, "%s\n", base64.StdEncoding.EncodeToString(h))
			}
		}
		req.WriteString("\n")
		req.Write(cp.Raw)
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/add-checkpoint", &req)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(hr)
		if err != nil {
			return nil, httpbound.Unwrap(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			return body, nil
		case http.StatusConflict:
			n, err := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
			if err != nil || n > cp.Size {
				return nil, fmt.Errorf("witness holds size %q, beyond the checkpoint's %d", strings.TrimSpace(string(body)), cp.Size)
			}
			old = n
			continue
		}
		return nil, fmt.Errorf("witness answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil, errors.New("witness kept answering 409 Conflict")
}
