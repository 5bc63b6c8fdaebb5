package graph

import (
	"errors"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// EventSource yields events in log order and io.EOF at the end;
// *eventlog.Reader is one.
type EventSource interface {
	Next() (*eventlog.Event, error)
}

// NewEventSource returns an EventSource over the event log r (name is used
// in errors) that decodes lines with eventlog.DecodeEventFast.
func NewEventSource(r io.Reader, name string) EventSource {
	return eventlog.NewFastReader(r, name)
}

// lineReporter is implemented by sources that know the line last read.
type lineReporter interface{ Line() int64 }

// Build reads every event of src and returns the graph. Invalid events are
// evidence errors (exit code Tampered) naming the event and, for a
// *eventlog.Reader, the line.
func Build(src EventSource, opts Options) (*Graph, error) {
	g := New()
	m := newMapper(opts, func(s, p string, o Term) error {
		n := g.index[s]
		if n == nil {
			n = NewNode(s)
			g.index[s] = n
		}
		n.Add(p, o)
		return nil
	})
	if err := mapAll(src, m); err != nil {
		return nil, err
	}
	if err := m.finish(); err != nil {
		return nil, err
	}
	g.Nodes = make([]*Node, 0, len(g.index))
	for _, n := range g.index {
		g.Nodes = append(g.Nodes, n)
	}
	sortNodes(g.Nodes)
	return g, nil
}

// buildEvents builds the graph of an in-memory event list.
func buildEvents(events []*eventlog.Event, opts Options) (*Graph, error) {
	return Build(&sliceSource{events: events}, opts)
}

type sliceSource struct {
	events []*eventlog.Event
	i      int
}

func (s *sliceSource) Next() (*eventlog.Event, error) {
	if s.i >= len(s.events) {
		return nil, io.EOF
	}
	s.i++
	return s.events[s.i-1], nil
}

func mapAll(src EventSource, m *mapper) error {
	for {
		e, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *eventlog.ParseError
			if errors.As(err, &pe) {
				return wrapTampered(err)
			}
			return err
		}
		if err := m.event(e); err != nil {
			err = placeEventError(src, err, true)
			return exitcode.New(exitcode.Tampered, err, "the event log is not valid; run 'witness verify' on it to see whether it was tampered with")
		}
	}
}

func wrapTampered(err error) error {
	if errors.Is(err, eventlog.ErrCutOff) {
		return exitcode.New(exitcode.Incomplete, err, "the log was cut off (the lines before are intact as far as the graph goes); run 'witness verify' on it, or graph a complete log")
	}
	return exitcode.New(exitcode.Tampered, err, "the event log is not valid; run 'witness verify' on it to see whether it was tampered with")
}

// placeEventError gives a mapping error the file (and, when the source's
// line is the event's own, withLine, the line) of the source, in the one
// position format; other errors get the file name in front. The streaming
// path reads ahead, so its source's line is not the event's.
func placeEventError(src EventSource, err error, withLine bool) error {
	var ee *eventError
	if errors.As(err, &ee) && ee.File == "" {
		if n, ok := src.(namer); ok {
			ee.File = n.Name()
		}
		if lr, ok := src.(lineReporter); ok && withLine {
			ee.Line = lr.Line()
		}
		return err
	}
	if lr, ok := src.(lineReporter); ok && withLine {
		err = fmt.Errorf("line %d: %w", lr.Line(), err)
	}
	return withName(src, err)
}

// namer is implemented by sources that know their file name.
type namer interface{ Name() string }

func withName(src EventSource, err error) error {
	if n, ok := src.(namer); ok {
		return fmt.Errorf("%s: %w", n.Name(), err)
	}
	return err
}
