// Package progress owns the progress line of the verbs that read long
// logs (graph, verify, report, replay): one line on stderr, rewritten in
// place ("\r"), throttled, that says what is being read, how much of it,
// how fast and, when the size is known, how long is left. It writes
// nothing unless it is enabled, and the CLI enables it only when stderr is
// a terminal and --quiet is not given (or WITNESS_PROGRESS=1 forces it).
// There is no global state: a Reporter is made per command and passed
// through options (docs/design/progress.md).
package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Interval is the shortest time between two updates of the line (4 a second).
const Interval = 250 * time.Millisecond

// Reporter writes the progress line of one command. The zero value and a
// nil *Reporter are disabled: they write nothing. It is safe for use by
// several goroutines.
type Reporter struct {
	w   io.Writer
	now func() time.Time

	mu      sync.Mutex
	cur     *reading
	last    time.Time // when the line was last written
	written int       // width of the line on screen, to blank it
}

// reading is one input being read.
type reading struct {
	name   string
	size   int64 // -1: unknown (a pipe)
	events bool  // count lines as events (an events.jsonl)
	start  time.Time
	bytes  int64
	lines  int64
}

// New returns a Reporter that writes to w when enabled is true, and a
// disabled one (nil) otherwise. now is the clock (nil: time.Now).
func New(w io.Writer, enabled bool, now func() time.Time) *Reporter {
	if !enabled || w == nil {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Reporter{w: w, now: now}
}

// Enabled reports whether the progress line is on for a command: never
// with quiet; force "1" turns it on and "0" off (WITNESS_PROGRESS); else
// it is on when stderr is a terminal.
func Enabled(stderr io.Writer, quiet bool, force string) bool {
	switch {
	case quiet || force == "0":
		return false
	case force == "1":
		return true
	}
	f, ok := stderr.(*os.File)
	return ok && IsTerminal(f.Fd())
}

// Reader returns r counted on the line as the input name: its bytes and,
// with events, its lines (one event per line of an event log). The size
// of the file name, when it has one, gives the percentage and the ETA. A
// disabled Reporter returns r itself.
func (p *Reporter) Reader(name string, r io.Reader, events bool) io.Reader {
	if p == nil {
		return r
	}
	size := int64(-1)
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	p.mu.Lock()
	p.cur = &reading{name: name, size: size, events: events, start: p.now()}
	cur := p.cur
	p.last = time.Time{} // a new input is shown at once
	p.mu.Unlock()
	return &countingReader{p: p, r: r, at: cur}
}

// Wrap is Reader for event logs, in the shape of the libraries' read hooks
// (verify.Options.Progress, replay.LoadOptions.Progress). A disabled
// Reporter gives nil: no hook.
func (p *Reporter) Wrap(events bool) func(name string, r io.Reader) io.Reader {
	if p == nil {
		return nil
	}
	return func(name string, r io.Reader) io.Reader { return p.Reader(name, r, events) }
}

type countingReader struct {
	p  *Reporter
	r  io.Reader
	at *reading
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.p.add(c.at, b[:n])
	}
	return n, err
}

// add counts b read from at and rewrites the line if the last write is
// Interval old (or at is new).
func (p *Reporter) add(at *reading, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at.bytes += int64(len(b))
	if at.events {
		at.lines += int64(bytes.Count(b, []byte{'\n'}))
	}
	if at != p.cur {
		return
	}
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < Interval {
		return
	}
	p.last = now
	p.show(line(at, now))
}

// show writes s over the line on screen.
func (p *Reporter) show(s string) {
	pad := ""
	if n := p.written - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
	p.written = len(s)
}

// Done blanks the line, so that what the command prints next starts on a
// clean line. It may be called more than once.
func (p *Reporter) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.written))
		p.written = 0
	}
	p.cur = nil
}

// line is the progress line of at at time now, e.g.
// "witness: reading events.jsonl: 12034 events, 4.1 of 9.8 MB (42%), 20.3 MB/s, ETA 0:01".
func line(at *reading, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "witness: reading %s: ", filepath.Base(at.name))
	if at.events {
		fmt.Fprintf(&b, "%d events, ", at.lines)
	}
	mb := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/1e6) }
	if at.size >= 0 {
		pct := int64(100)
		if at.size > 0 {
			pct = min(at.bytes*100/at.size, 100)
		}
		fmt.Fprintf(&b, "%s of %s MB (%d%%)", mb(at.bytes), mb(at.size), pct)
	} else {
		fmt.Fprintf(&b, "%s MB", mb(at.bytes))
	}
	el := now.Sub(at.start).Seconds()
	if el <= 0 {
		return b.String()
	}
	rate := float64(at.bytes) / el
	fmt.Fprintf(&b, ", %.1f MB/s", rate/1e6)
	if at.events {
		fmt.Fprintf(&b, " (%.0f events/s)", float64(at.lines)/el)
	}
	if at.size >= 0 && rate > 0 {
		left := time.Duration(float64(max(at.size-at.bytes, 0)) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", clock(left))
	}
	return b.String()
}

// clock formats d as m:ss (h:mm:ss past an hour), rounded up to the second.
func clock(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
