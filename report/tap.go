package report

import (
	"sync/atomic"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/verify"
)

// logTap is the report's verify.Tap on a single log: verify.Run reads and
// decodes the log once, and the tap hands each event on to the page's
// first pass (firstFrom) and, when the graph stream runs, to the stream
// (compactGraph), each reading on a goroutine of its own. Both see the
// events, and the error they stop at, that their own reader of the file
// would give them (eventlog.Reader with SetFastWhole for the page,
// eventlog.FastReader for the stream): docs/design/report.md.
type logTap struct {
	file   string
	page   *verify.EventFeed
	stream *verify.EventFeed // nil without a graph stream
	// used: verify read the log (a line was handed on); when it did not
	// (a seal it could not use), the report reads the log itself
	used bool
}

// newLogTap returns the tap of file, with a feed for the graph stream
// when stream is set.
func newLogTap(file string, stream bool) *logTap {
	t := &logTap{file: file, page: verify.NewEventFeed()}
	if stream {
		t.stream = verify.NewEventFeed()
	}
	return t
}

// tap is what verify.Options.Tap gets. Its calls run on verify.Run's
// goroutine, the one that later reads used.
func (t *logTap) tap() *verify.Tap {
	return &verify.Tap{
		Event: func(_ int64, ev *eventlog.Event) {
			t.used = true
			t.page.Add(ev)
			if t.stream != nil {
				t.stream.Add(ev)
			}
		},
		ParseError: func(line int64, raw []byte, partial bool, perr *eventlog.ParseError) {
			t.used = true
			// eventlog.Reader's error for the line is verify's
			t.page.Fail(perr)
			if t.stream != nil {
				t.stream.Fail(fastReaderError(t.file, line, raw, partial, perr))
			}
		},
	}
}

// close ends both feeds: called once verify.Run has returned.
func (t *logTap) close() {
	t.page.Close()
	if t.stream != nil {
		t.stream.Close()
	}
}

// fastReaderError is the error eventlog.FastReader (graph.NewEventSource)
// gives for a line that is not an event, whose eventlog.Reader error is
// perr: the same, but for a cut-off last line, which it says is cut off
// (eventlog.ErrCutOff). The line is decoded again as it decodes it (a
// line too long, raw nil, has the same error from both).
func fastReaderError(file string, line int64, raw []byte, partial bool, perr *eventlog.ParseError) error {
	if raw == nil {
		return perr
	}
	if _, err := eventlog.NewFastReader(nil, file).DecodeLine(raw, line, partial); err != nil {
		return err
	}
	return perr
}

// tapSource is the graph stream's graph.EventSource over the tap's feed:
// it names the log (as FastReader does, for the stream's errors) and
// stops with errCanceled once stop is set.
type tapSource struct {
	feed *verify.EventFeed
	name string
	stop *atomic.Bool
}

func (s *tapSource) Next() (*eventlog.Event, error) {
	if s.stop.Load() {
		return nil, errCanceled
	}
	return s.feed.Next()
}

// Name is the log's name (graph's errors name the source's file).
func (s *tapSource) Name() string { return s.name }
