package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
)

type wireKey struct {
	dir cassette.Dir
	off int64
}

// addDetails fills d.Details for the given timeline rows: payload and
// sha256 from the event, exact wire bytes from the cassette beside the log
// (the WireRef's file, relative to the log), each cut at MaxExcerpt bytes.
// refs[i] is the event of rows[i].
func addDetails(d *Data, logs []*logState, refs []eventRef, rows []int, o Options) error {
	// which wire lines each log needs
	need := make([]map[string]map[wireKey]bool, len(logs))
	for _, ref := range refs {
		li, e := ref.log, ref.ev
		if e.Wire == nil || e.Wire.Cassette == "" || len(e.Wire.Offsets) == 0 {
			continue
		}
		if need[li] == nil {
			need[li] = map[string]map[wireKey]bool{}
		}
		m := need[li][e.Wire.Cassette]
		if m == nil {
			m = map[wireKey]bool{}
			need[li][e.Wire.Cassette] = m
		}
		for _, off := range e.Wire.Offsets {
			m[wireKey{cassette.C2S, off}] = true
			m[wireKey{cassette.S2C, off}] = true
		}
	}
	type cas struct {
		lines map[wireKey][]byte
		err   string
	}
	wires := make([]map[string]*cas, len(logs))
	for li, byFile := range need {
		wires[li] = map[string]*cas{}
		for name, keys := range byFile {
			c := &cas{}
			c.lines, c.err = readWire(filepath.Join(filepath.Dir(logs[li].file), filepath.FromSlash(name)), keys)
			wires[li][name] = c
		}
	}
	for i, r := range rows {
		li, e := refs[i].log, refs[i].ev
		det := Detail{Row: r, ID: e.ID, Kind: string(e.Kind), TS: e.TS, Source: string(e.Source), Tool: e.Tool, Method: e.Method,
			RPCID: string(e.RPCID), SHA256: e.PayloadSHA256, Links: links(e)}
		if len(logs) > 1 {
			det.ID = fmt.Sprintf("%s (log %d)", e.ID, li+1)
			if li < len(d.Logs) && d.Logs[li].Server != "" {
				det.ID = d.Logs[li].Server + ":" + e.ID // as witness why names it
			}
		}
		p := payloadOf(e)
		det.PayloadN = len(p)
		det.Payload = excerpt(p, o.MaxExcerpt)
		switch {
		case e.Wire == nil:
			det.WireNote = "no wire bytes: the event was not read from a cassette"
		case e.Wire.X > 0 || len(e.Wire.Offsets) == 0:
			det.WireNote = fmt.Sprintf("exchange %d of the HTTP cassette %s", e.Wire.X, e.Wire.Cassette)
		default:
			c := wires[li][e.Wire.Cassette]
			if c.err != "" {
				det.WireNote = c.err
				break
			}
			var buf bytes.Buffer
			missing := 0
			for _, off := range e.Wire.Offsets {
				b, ok := c.lines[wireKey{dirOf(e), off}]
				if !ok {
					b, ok = c.lines[wireKey{other(dirOf(e)), off}]
				}
				if !ok {
					missing++
					continue
				}
				buf.Write(b)
			}
			det.WireN = buf.Len()
			det.Wire = excerpt(buf.Bytes(), o.MaxExcerpt)
			if missing > 0 {
				det.WireNote = fmt.Sprintf("%d of %d wire lines not found in %s", missing, len(e.Wire.Offsets), e.Wire.Cassette)
			}
		}
		d.Details = append(d.Details, det)
	}
	return nil
}

// eventRef is one event of the merged timeline.
type eventRef struct {
	log int
	ev  *eventlog.Event
}

func dirOf(e *eventlog.Event) cassette.Dir {
	switch e.Direction {
	case "c2s":
		return cassette.C2S
	case "s2c":
		return cassette.S2C
	}
	if e.Kind == eventlog.KindToolCall || e.Kind == eventlog.KindMCPRequest {
		return cassette.C2S
	}
	return cassette.S2C
}

func other(d cassette.Dir) cassette.Dir {
	if d == cassette.C2S {
		return cassette.S2C
	}
	return cassette.C2S
}

// readWire reads the wanted lines of a stdio cassette; a cassette that
// cannot be read is a note, not an error.
func readWire(path string, keys map[wireKey]bool) (map[wireKey][]byte, string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Sprintf("cassette %s not found beside the log", filepath.Base(path))
	}
	defer f.Close()
	r, err := cassette.NewReader(f, filepath.Base(path))
	if err != nil {
		return nil, fmt.Sprintf("cassette %s unreadable: %v", filepath.Base(path), err)
	}
	out := map[wireKey][]byte{}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, ""
		}
		if err != nil {
			return out, fmt.Sprintf("cassette %s: %v", filepath.Base(path), err)
		}
		if rec.Dir == "" || rec.Dir == cassette.Stderr {
			continue
		}
		k := wireKey{rec.Dir, rec.Off}
		if keys[k] {
			b := rec.Wire()
			if rec.Redacted {
				b = append([]byte("[redacted on the wire; the cassette holds its redacted form]\n"), b...)
			}
			out[k] = b
		}
	}
}

// payloadOf is what the page shows as the event's payload.
func payloadOf(e *eventlog.Event) []byte {
	switch {
	case len(e.Payload) > 0:
		return e.Payload
	case e.Header != nil:
		return jsonOf(e.Header)
	case e.End != nil:
		return jsonOf(e.End)
	case e.Effect != nil:
		return jsonOf(e.Effect)
	case e.Message != nil:
		return jsonOf(e.Message)
	}
	return nil
}

// links names an event's causal links ("call=e3 cause=e2").
func links(e *eventlog.Event) string {
	var p []string
	for _, l := range [][2]string{{"call", e.Call}, {"input", e.Input}, {"cause", e.Cause}, {"during", e.During}, {"concerns", e.Concerns}} {
		if l[1] != "" {
			p = append(p, l[0]+"="+l[1])
		}
	}
	if len(e.DuringCandidates) > 0 {
		p = append(p, "during?="+strings.Join(e.DuringCandidates, ","))
	}
	return strings.Join(p, " ")
}

// excerpt keeps at most max bytes, cut on a rune boundary; bytes that are
// not UTF-8 are shown as \xNN.
func excerpt(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	var s strings.Builder
	for len(b) > 0 {
		r, sz := utf8.DecodeRune(b)
		if r == utf8.RuneError && sz <= 1 {
			fmt.Fprintf(&s, `\x%02x`, b[0])
			b = b[1:]
			continue
		}
		s.Write(b[:sz])
		b = b[sz:]
	}
	return s.String()
}

// jsonOf is v's canonical JSON, or nothing.
func jsonOf(v any) []byte {
	b, err := canon.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
