package proxy

import (
	"bytes"
	"sync"
)

// Dir is the direction of a stream the proxy forwards, named as in the
// cassette format.
type Dir string

// The three streams.
const (
	C2S    Dir = "c2s"    // host (client) to server: the host's stdin
	S2C    Dir = "s2c"    // server to host: the server's stdout
	Stderr Dir = "stderr" // the server's stderr
)

type chunk struct {
	dir Dir
	b   []byte
	eof bool // the stream ended; b is empty
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

// lineSplitter turns the chunks of one stream into lines, keeping every byte:
// each complete line includes its '\n'; what is left at the end of the
// stream is a partial line.
type lineSplitter struct {
	buf []byte
}

// feed appends b and calls emit for each complete line.
func (s *lineSplitter) feed(b []byte, emit func(line []byte, partial bool)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.buf = append(s.buf, b...)
			return
		}
		if len(s.buf) == 0 {
			emit(b[:i+1], false)
		} else {
			s.buf = append(s.buf, b[:i+1]...)
			emit(s.buf, false)
			s.buf = s.buf[:0]
		}
		b = b[i+1:]
	}
}

// flush emits the partial line left at the end of the stream, if any.
func (s *lineSplitter) flush(emit func(line []byte, partial bool)) {
	if len(s.buf) > 0 {
		emit(s.buf, true)
		s.buf = nil
	}
}
