package firewall

import (
	"errors"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// DeriveResult counts what DeriveLog wrote.
type DeriveResult struct {
	Events   int64 `json:"events"`
	Messages int   `json:"messages"`
}

// DeriveLog copies the event log r to w as a new log with the message
// events the mapping derives from its tool calls inserted after the event
// they come from (cause = that event, id = its id and ".m<k>"). The original
// session_end is not copied: its count, head and signatures no longer hold;
// the copy ends with an unsigned session_end whose reason says it was
// derived. The original log stays the evidence; the copy is a working file.
func DeriveLog(r io.Reader, name string, w io.Writer, mapping *Mapping, mappingDigest string) (*DeriveResult, error) {
	rd := capture.NewReader(r, name)
	der := newDeriver(mapping)
	var wr *capture.Writer
	res := &DeriveResult{}
	emit := func(e *capture.Event) error {
		if wr == nil {
			wr = capture.NewWriter(w, e.Session)
		}
		if err := wr.Append(e); err != nil {
			return exitcode.New(exitcode.Failure, err, "")
		}
		res.Events++
		return nil
	}
	emitMsgs := func(src *capture.Event, msgs []Candidate) error {
		for _, m := range msgs {
			msg := m.Message
			cause := m.Event
			if i := len(cause) - 1; i >= 0 {
				for i >= 0 && cause[i] != '.' {
					i--
				}
				if i > 0 {
					cause = cause[:i]
				}
			}
			e := &capture.Event{ID: m.Event, Kind: capture.KindMessage, TS: src.TS, Source: src.Source, Cause: cause, Message: &msg}
			if err := emit(e); err != nil {
				return err
			}
			res.Messages++
		}
		return nil
	}
	var last *capture.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *capture.ParseError
			if errors.As(err, &pe) {
				return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("events: %w", err), "the event log is not valid; run 'witness verify' on it")
			}
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
		last = ev
		if ev.Kind == capture.KindSessionEnd {
			continue
		}
		msgs, derr := der.derive(ev)
		if derr != nil {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("%s:%d: %w", name, rd.Line(), derr), mappingHint)
		}
		cp := *ev
		if cp.Kind == capture.KindSessionStart && cp.Header != nil {
			h := *cp.Header
			h.Notes = append(append([]string{}, h.Notes...), "messages derived by witness firewall derive with mapping sha256:"+mappingDigest+"; the original session_end was dropped")
			cp.Header = &h
		}
		if err := emit(&cp); err != nil {
			return nil, err
		}
		if err := emitMsgs(ev, msgs); err != nil {
			return nil, err
		}
	}
	if last != nil {
		if err := emitMsgs(last, der.flush()); err != nil {
			return nil, err
		}
	}
	if wr != nil {
		end := &capture.Event{Kind: capture.KindSessionEnd, TS: last.TS, Source: capture.SourceObserved,
			End: &capture.End{Count: wr.Count(), Head: wr.Head(), Reason: "derived: messages added by witness firewall derive; unsigned"}}
		if err := emit(end); err != nil {
			return nil, err
		}
	}
	return res, nil
}
