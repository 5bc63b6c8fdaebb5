package proxy

import (
	"encoding/json"
	"io"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
)

// CassetteName is the cassette file name inside the output directory, as
// events name it in their wire references.
const CassetteName = "cassette.jsonl"

// Recording is the Sink of a proxied session: it writes every wire line to
// the cassette (package cassette) and feeds each written record to the
// event deriver of package capture, the same one `witness capture` uses, so
// that the event log is derived from exactly the recorded bytes and
// capture.EventsFromCassette re-derives the same log from the cassette.
// It runs on one goroutine (the forwarder's recorder).
type Recording struct {
	cas     *cassette.Writer
	d       *capture.Deriver
	signers []eventlog.Signer
}

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
	Redactor *capture.Redactor
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
	d := capture.NewDeriver(o.Events, cw.Header(), capture.DeriveOptions{
		Seal: o.Seal, Cassette: CassetteName, Effects: o.Effects.Func(), Redactor: o.Redactor,
	})
	cw.OnRecord(func(r *cassette.Record) { _ = d.Feed(r) })
	return &Recording{cas: cw, d: d, signers: o.Signers}, nil
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
	if err != nil {
		return err
	}
	return r.d.Err()
}

// Life implements Sink.
func (r *Recording) Life(rec cassette.Record) error {
	if _, err := r.cas.Lifecycle(rec); err != nil {
		return err
	}
	return r.d.Err()
}

// Close ends the event log with the signed session_end. Its reason names
// tool calls left without a response and how the server exited; failure,
// when not empty, says that recording failed, so that a log cut short by a
// recording failure never ends as if complete.
func (r *Recording) Close(failure string) error {
	r.cas.OnRecord(nil)
	fo := capture.FinishOptions{Signers: r.signers}
	if failure != "" {
		fo.Reason = "recording failed, events after the failure are missing: " + failure
	}
	return r.d.Finish(fo)
}

// Func adapts the mapping to the deriver: a call of a mapped tool has the
// rule's effect, its target read from the call's arguments.
func (m *EffectMap) Func() capture.EffectFunc {
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
