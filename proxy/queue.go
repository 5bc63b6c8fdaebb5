package proxy

import (
	"bytes"
	"sync"

	"github.com/agent-trace-witness/witness/cassette"
)

// Dir is the direction of a stream the proxy forwards (the cassette's).
type Dir = cassette.Dir

// The three streams.
const (
	C2S    = cassette.C2S    // host (client) to server: the host's stdin
	S2C    = cassette.S2C    // server to host: the server's stdout
	Stderr = cassette.Stderr // the server's stderr
)

type chunk struct {
	dir  Dir
	b    []byte
	eof  bool             // the stream ended; b is empty
	life *cassette.Record // a lifecycle record instead of bytes
}

// tapQueue hands copies of forwarded chunks from the forwarding goroutines to
// the recorder goroutine without ever blocking the forwarders. It is
// unbounded up to limit bytes; past that, recording is abandoned (and
// reported) while forwarding goes on.
type tapQueue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []chunk
	pending  int
	limit    int
	closed   bool
	overflow bool
}

func newTapQueue(limit int) *tapQueue {
	q := &tapQueue{limit: limit}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues a copy of b. It never blocks on the consumer.
func (q *tapQueue) push(dir Dir, b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.overflow {
		return
	}
	if q.pending+len(b) > q.limit {
		q.overflow = true
		q.items = nil
		q.pending = 0
		q.cond.Signal()
		return
	}
	q.items = append(q.items, chunk{dir: dir, b: bytes.Clone(b)})
	q.pending += len(b)
	q.cond.Signal()
}

// eof queues the end of a stream.
func (q *tapQueue) eof(dir Dir) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.overflow {
		return
	}
	q.items = append(q.items, chunk{dir: dir, eof: true})
	q.cond.Signal()
}

// lifecycle queues a lifecycle record, in order with the bytes.
func (q *tapQueue) lifecycle(rec cassette.Record) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.overflow {
		return
	}
	q.items = append(q.items, chunk{life: &rec})
	q.cond.Signal()
}

// close ends the queue: pop returns false once the queued items are taken.
func (q *tapQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Signal()
	q.mu.Unlock()
}

// pop takes all queued chunks, waiting for some. It returns ok=false when the
// queue is closed and empty, and overflow=true once the limit was passed.
func (q *tapQueue) pop() (items []chunk, overflow, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed && !q.overflow {
		q.cond.Wait()
	}
	if q.overflow {
		return nil, true, false
	}
	items = q.items
	q.items = nil
	q.pending = 0
	return items, false, len(items) > 0 || !q.closed
}

// WireLine is one line of a forwarded stream, as handed to a Sink.
type WireLine struct {
	Dir Dir
	// Data is a complete line with its '\n'; or, when Partial, the bytes
	// left when the stream ended without '\n'; or, when Cont, a piece of an
	// over-long line that continues in the next WireLine of Dir. For stderr,
	// Data is a chunk as read (stderr is not framed).
	Data    []byte
	Partial bool
	Cont    bool
}

// lineSplitter turns the chunks of one stream into lines, keeping every byte:
// each complete line includes its '\n'; what is left at the end of the
// stream is a partial line. A line longer than max is emitted in pieces.
type lineSplitter struct {
	buf []byte
	max int
}

// feed appends b and calls emit for each complete line or piece.
func (s *lineSplitter) feed(b []byte, emit func(data []byte, partial, cont bool)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.buf = append(s.buf, b...)
			if s.max > 0 && len(s.buf) >= s.max {
				emit(s.buf, false, true)
				s.buf = s.buf[:0]
			}
			return
		}
		if len(s.buf) == 0 {
			emit(b[:i+1], false, false)
		} else {
			s.buf = append(s.buf, b[:i+1]...)
			emit(s.buf, false, false)
			s.buf = s.buf[:0]
		}
		b = b[i+1:]
	}
}

// flush emits the partial line left at the end of the stream, if any.
func (s *lineSplitter) flush(emit func(data []byte, partial, cont bool)) {
	if len(s.buf) > 0 {
		emit(s.buf, true, false)
		s.buf = nil
	}
}
