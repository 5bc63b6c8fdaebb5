package core

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// DeriveResult counts what DeriveLog wrote.
type DeriveResult struct {
	Events   int64 `json:"events"`
	Messages int   `json:"messages"`
}

// DeriveLog writes to w a new log made of the event log r without its
// session_end (every line byte-identical, so the hash chain and event ids
// hold), then one message event per message the mapping derives from the
// tool events, in log order (cause: the tool_call or tool_response it comes
// from), then an unsigned session_end whose reason says the log was derived.
// The original log stays the evidence; the copy is a working file.
func DeriveLog(r io.Reader, name string, w io.Writer, mapping *Mapping, mappingDigest string) (*DeriveResult, error) {
	rd := eventlog.NewReader(r, name)
	der := newDeriver(mapping)
	res := &DeriveResult{}
	var wr *eventlog.Writer
	var msgs []Candidate
	src := map[string]*eventlog.Event{}
	var last *eventlog.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *eventlog.ParseError
			if errors.As(err, &pe) && rd.Partial() {
				return nil, exitcode.New(exitcode.Incomplete, fmt.Errorf("events: %w (the last line has no trailing newline: cut off)", err), "the event log is truncated")
			}
			if errors.As(err, &pe) {
				return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("events: %w", err), "the event log is not valid; run 'witness verify' on it")
			}
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
		if rd.Partial() {
			return nil, exitcode.New(exitcode.Incomplete, fmt.Errorf("events: %s:%d: the last line has no trailing newline (cut off)", name, rd.Line()), "the event log is truncated")
		}
		if ev.Kind == eventlog.KindSessionEnd {
			continue // dropped: its count, head and signatures no longer hold
		}
		// copy the line as it was
		if _, err := w.Write(append(append([]byte(nil), rd.Raw()...), '\n')); err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("write derived log: %w", err), "")
		}
		wr = eventlog.ResumeWriter(w, ev.Session, ev.Seq, eventlog.LineHash(rd.Raw()))
		res.Events++
		last = ev
		d, derr := der.derive(ev)
		if derr != nil {
			return nil, exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Line: rd.Line(), Err: derr}, mappingHint)
		}
		for _, m := range d {
			src[m.Event] = ev
		}
		msgs = append(msgs, d...)
	}
	if wr == nil {
		return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("events: %s: no events", name), "")
	}
	msgs = append(msgs, der.flush()...)
	for _, m := range msgs {
		msg := m.Message
		cause := m.Event[:strings.LastIndexByte(m.Event, '.')]
		ts, source := last.TS, last.Source
		if s, ok := src[m.Event]; ok {
			ts, source = s.TS, s.Source
		}
		e := &eventlog.Event{Kind: eventlog.KindMessage, TS: ts, Source: source, Cause: cause, Message: &msg}
		if err := wr.Append(e); err != nil {
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
		res.Events++
		res.Messages++
	}
	if err := eventlog.FinishWith(wr, eventlog.EndOptions{TS: last.TS, Reason: "derived: " + fmt.Sprint(res.Messages) + " message events added by witness firewall derive (mapping sha256:" + mappingDigest + "); unsigned"}); err != nil {
		return nil, exitcode.New(exitcode.Failure, err, "")
	}
	res.Events++
	return res, nil
}
