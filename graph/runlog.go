package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/agent-trace-witness/witness/eventlog"
)

// StreamRunJSONLD writes the JSON-LD document of one event log, read from
// r, to w as StreamJSONLD does (bounded memory; the bytes of
// Build(...).WriteJSONLD, which are BuildRun's for one log), and returns
// the log's RunLog as BuildRun gives it for that one log: its LOGNAME,
// session, base IRI and sha256. name is the path as given.
func StreamRunJSONLD(r io.Reader, name string, w io.Writer, opts Options, so StreamOptions) (RunLog, StreamStats, error) {
	h := sha256.New()
	src := &firstEventSource{src: NewEventSource(io.TeeReader(r, h), name)}
	st, err := StreamJSONLD(src, w, opts, so)
	if err != nil {
		return RunLog{}, st, err
	}
	// the sha256 is of the whole file, as BuildRun's
	if _, err := io.Copy(h, r); err != nil {
		return RunLog{}, st, err
	}
	rl := RunLog{Name: name, Label: logLabels([]LogInput{{Name: name}})[0], SHA256: hex.EncodeToString(h.Sum(nil))}
	if src.seen {
		rl.Session = src.session
		rl.Base = SessionIRI(rl.Session)
	}
	return rl, st, nil
}

// firstEventSource keeps the session of the first event it hands on, and
// passes the line and name of the source it wraps.
type firstEventSource struct {
	src     EventSource
	seen    bool
	session string
}

func (f *firstEventSource) Next() (*eventlog.Event, error) {
	e, err := f.src.Next()
	if err == nil && !f.seen {
		f.seen, f.session = true, e.Session
	}
	return e, err
}

func (f *firstEventSource) Line() int64 {
	if lr, ok := f.src.(lineReporter); ok {
		return lr.Line()
	}
	return 0
}

func (f *firstEventSource) Name() string {
	if n, ok := f.src.(namer); ok {
		return n.Name()
	}
	return ""
}
