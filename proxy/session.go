package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"io"
	"sync"
	"time"
)

// Recording is the Sink of a proxied session: it writes every wire line to
// the cassette (package cassette) and feeds each written record to the
// event deriver of package capture, the same one `witness capture` uses, so
// that the event log is derived from exactly the recorded bytes and
// derive.EventsFromCassette re-derives the same log from the cassette.
//
// Line and Life write the cassette at once (one write(2) per record, no
// fsync: see docs/design/proxy.md); the events are derived in Settle, off
// the forwarding path (at the latest SettleDelay after the line), and the
// event log is written through a buffer that is flushed at least every
// flushEvery, at lifecycle records and at the end.
type Recording struct {
	cas     *cassette.Writer
	d       *derive.Deriver
	ev      *bufio.Writer
	signers []eventlog.Signer

	mu    sync.Mutex         // q
	q     []*cassette.Record // written to the cassette, not yet derived
	spare []*cassette.Record
	life  bool      // a lifecycle record was queued: flush the events after it
	flush time.Time // last flush of the event log
}

// flushEvery bounds how long derived events may wait in the buffer while
// the session is active.
const flushEvery = 50 * time.Millisecond

// RecordingOptions configure a Recording.
type RecordingOptions struct {
	Cassette io.Writer // cassette.jsonl
	Events   io.Writer // events.jsonl
	Command  string
	Args     []string
	EnvNames []string
	Started  string // the cassette's start time (eventlog.Timestamp)
	Frozen   bool   // ATW_WITNESS_TS is set: the cassette carries no times
	Seal     *eventlog.SealRef
	Effects  *EffectMap
	Signers  []eventlog.Signer
	// Redactor, when set, replaces matching values by keyed hashes in the
	// cassette and the events before anything is written (the host and
	// the server still see the real bytes).
	Redactor *derive.Redactor
	Notes    []string // extra notes for the session header
}

// NewRecording writes the cassette header and returns the recording.
func NewRecording(o RecordingOptions) (*Recording, error) {
	h := cassette.Header{Command: o.Command, Args: o.Args, Env: o.EnvNames, Started: o.Started, Frozen: o.Frozen, Mode: "proxy"}
	if o.Redactor != nil {
		b, err := json.Marshal(o.Redactor.Info())
		if err != nil {
			return nil, err
		}
		h.Redaction = b
	}
	cw, err := cassette.NewWriter(o.Cassette, h)
	if err != nil {
		return nil, err
	}
	if red := o.Redactor; red != nil {
		cw.SetRedact(func(_ cassette.Dir, b []byte) ([]byte, bool) { return red.Line(b) })
	}
	ev := bufio.NewWriterSize(o.Events, 64<<10)
	d := derive.NewDeriver(ev, cw.Header(), derive.Options{
		Seal: o.Seal, Cassette: derive.CassetteFile, Effects: o.Effects.Func(), Redactor: o.Redactor, Notes: o.Notes,
	})
	r := &Recording{cas: cw, d: d, ev: ev, signers: o.Signers, flush: time.Now()}
	cw.OnRecord(func(rec *cassette.Record) {
		// the deriver reads a line after Line returned (in Settle, up to
		// SettleDelay later) and keeps parts of it (held events, the
		// arguments of open calls) while the stream reuses its buffer: it
		// gets a copy of the lines it reads; stderr chunks and pieces of
		// over-long lines, of which it reads only the length, stay valid
		// until the stream's next Settle (see Sink)
		if rec.Dir != "" && rec.Dir != Stderr && !rec.Cont && !rec.Redacted {
			rec.Data = bytes.Clone(rec.Data)
		}
		r.mu.Lock()
		r.q = append(r.q, rec)
		if rec.Life != "" {
			r.life = true
		}
		r.mu.Unlock()
	})
	return r, nil
}

// Line implements Sink.
func (r *Recording) Line(l WireLine) error {
	var err error
	switch {
	case l.Cont:
		_, err = r.cas.RecordPiece(l.Dir, l.Data)
	case l.Dir != Stderr && !l.Partial:
		_, err = r.cas.Record(l.Dir, l.Data[:len(l.Data)-1], false)
	default:
		_, err = r.cas.Record(l.Dir, l.Data, l.Partial)
	}
	return err
}

// Life implements Sink.
func (r *Recording) Life(rec cassette.Record) error {
	_, err := r.cas.Lifecycle(rec)
	return err
}

// Settle implements Sink: it derives the events of every record written so
// far, in cassette order.
func (r *Recording) Settle() error {
	flush := false
	for {
		r.mu.Lock()
		batch := r.q
		if len(batch) > 0 {
			r.q = r.spare[:0]
		}
		flush = flush || r.life
		r.life = false
		r.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		for i, rec := range batch {
			if err := r.d.Feed(rec); err != nil {
				return fmt.Errorf("derive events: %w", err)
			}
			batch[i] = nil // the record's bytes belong to the stream
		}
		r.spare = batch[:0]
	}
	if flush || time.Since(r.flush) >= flushEvery {
		r.flush = time.Now()
		if err := r.ev.Flush(); err != nil {
			return fmt.Errorf("write event log: %w", err)
		}
	}
	return nil
}

// Close derives what is left and ends the event log with the signed
// session_end. Its reason names tool calls left without a response and how
// the server exited; failure, when not empty, says why the recording is
// incomplete (it becomes session_end.end.failure, beside what the records
// themselves show), so that a log cut short never ends as if complete.
func (r *Recording) Close(failure string) error {
	serr := r.Settle()
	r.cas.OnRecord(nil)
	if serr != nil && failure == "" {
		failure = serr.Error()
	}
	err := r.d.Finish(eventlog.EndOptions{Signers: r.signers, Failure: failure})
	if ferr := r.ev.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write event log: %w", ferr)
	}
	if err == nil {
		err = serr
	}
	return err
}

// Func adapts the mapping to the deriver: a call of a mapped tool has the
// rule's effect, its target read from the call's arguments.
func (m *EffectMap) Func() derive.EffectFunc {
	if m == nil {
		return nil
	}
	return func(tool string, args json.RawMessage) (eventlog.Effect, bool) {
		rule, ok := m.Rules[tool]
		if !ok {
			return eventlog.Effect{}, false
		}
		eff := eventlog.Effect{Op: rule.Op, Reason: "effects mapping: tool " + tool}
		if t, found := rule.TargetOf(args); found {
			eff.Target = t
		} else if rule.Target != "" {
			eff.Reason += "; target " + rule.Target + " not found in the arguments"
		}
		return eff, true
	}
}
