package proxy

import (
	"bytes"

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

// maxPiece bounds the piece of an over-long line written as one record, so
// that a record (and the buffer it is encoded in) stays small.
const maxPiece = 1 << 20

// lineSplitter turns the reads of one stream into recorded lines, keeping
// every byte: each complete line includes its '\n'; what is left at the end
// of the stream is a partial line. A line not yet complete is held (and not
// forwarded) up to max bytes; past that it is recorded in pieces, and from
// then on each read's part of it is recorded and forwarded at once, so that
// memory stays bounded whatever the length of the line.
type lineSplitter struct {
	max   int
	dir   Dir
	rec   *recorder
	pend  []byte // the start of a line, recorded and forwarded once complete
	spare []byte // the previous pend, being forwarded (see feed)
	long  bool   // a line over max is being recorded in pieces
	// pieces were recorded since the last lent: their Data is the stream's
	// buffer, which must not be reused before a Settle (see Sink)
	lentPieces bool
}

// lent reports whether pieces were recorded since the last call.
func (s *lineSplitter) lent() bool {
	l := s.lentPieces
	s.lentPieces = false
	return l
}

// feed records the lines and pieces that b completes and returns the bytes
// to forward now, in order: pre (held bytes of earlier reads) then post (a
// prefix of b). The bytes of b after post are held. pre stays valid until
// the next call.
func (s *lineSplitter) feed(b []byte) (pre, post []byte, err error) {
	done := 0  // b[:done] is recorded
	start := 0 // b[:start] went into pre (the end of a held line)
	for {
		i := bytes.IndexByte(b[done:], '\n')
		if i < 0 {
			break
		}
		end := done + i + 1
		seg := b[done:end]
		switch {
		case s.long:
			err = s.rec.line(WireLine{Dir: s.dir, Data: seg})
			s.long = false
		case len(s.pend)+len(seg)-1 > s.max:
			// complete, but over the limit all the same: in pieces, and
			// the '\n' ends it
			if len(s.pend) > 0 {
				if err = s.pieces(s.pend); err != nil {
					return nil, nil, err
				}
				pre = s.takePend()
			}
			if err = s.pieces(seg[:len(seg)-1]); err == nil {
				err = s.rec.line(WireLine{Dir: s.dir, Data: seg[len(seg)-1:]})
			}
		case len(s.pend) > 0:
			s.pend = append(s.pend, seg...)
			err = s.rec.line(WireLine{Dir: s.dir, Data: s.pend})
			pre, start = s.takePend(), end
		default:
			err = s.rec.line(WireLine{Dir: s.dir, Data: seg})
		}
		if err != nil {
			return nil, nil, err
		}
		done = end
	}
	tail := b[done:]
	if len(tail) == 0 {
		return pre, b[start:done], nil
	}
	if !s.long && len(s.pend)+len(tail) <= s.max {
		s.pend = append(s.pend, tail...)
		return pre, b[start:done], nil
	}
	// the line is over the limit: record what is held and the tail as
	// pieces, and forward them
	if !s.long && len(s.pend) > 0 {
		if err := s.pieces(s.pend); err != nil {
			return nil, nil, err
		}
		pre = s.takePend()
	}
	s.long = true
	if err := s.pieces(tail); err != nil {
		return nil, nil, err
	}
	return pre, b[start:], nil
}

// pieces records b as pieces of an over-long line.
func (s *lineSplitter) pieces(b []byte) error {
	s.lentPieces = s.lentPieces || len(b) > 0
	for len(b) > 0 {
		n := min(len(b), maxPiece)
		if err := s.rec.line(WireLine{Dir: s.dir, Data: b[:n], Cont: true}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// takePend returns the held bytes (now recorded) for forwarding and starts
// an empty pend in the other buffer; a large buffer is dropped.
func (s *lineSplitter) takePend() []byte {
	p := s.pend
	s.pend, s.spare = s.spare[:0], p
	if cap(s.pend) > maxPiece {
		s.pend = nil
	}
	return p
}

// flush records the partial line left at the end of the stream, if any,
// and returns the bytes to forward.
func (s *lineSplitter) flush() ([]byte, error) {
	if len(s.pend) == 0 && !s.long {
		return nil, nil
	}
	// a long line's last piece is empty when the stream ended right after
	// a piece: it still ends the line (partial)
	data := s.pend
	if err := s.rec.line(WireLine{Dir: s.dir, Data: data, Partial: true}); err != nil {
		return nil, err
	}
	s.long = false
	return s.takePend(), nil
}
