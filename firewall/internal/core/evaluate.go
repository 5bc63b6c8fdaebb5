package core

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
)

// ValidateMessage checks a message event's fields; the error names the
// field (eventlog.Message.Validate).
func ValidateMessage(m *eventlog.Message) (string, error) { return m.Validate() }

// ForEachMessage streams the message events of an event log (and, with a
// mapping, the messages derived from its tool calls) in log order. A line
// that is not a valid event, or an invalid message, is a Tampered error
// naming file, line and field.
func ForEachMessage(r io.Reader, name string, mapping *Mapping, fn func(Candidate) error) error {
	rd := eventlog.NewReader(r, name)
	var deriver *deriver
	if mapping != nil {
		deriver = newDeriver(mapping)
	}
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			if deriver != nil {
				for _, m := range deriver.flush() {
					if err := fn(m); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err != nil {
			var pe *eventlog.ParseError
			if errors.As(err, &pe) && rd.Partial() {
				return exitcode.New(exitcode.Incomplete, fmt.Errorf("events: %w (the last line has no trailing newline: cut off)", err), "the event log is truncated")
			}
			if errors.As(err, &pe) {
				return exitcode.New(exitcode.Tampered, fmt.Errorf("events: %w", err), "the event log is not valid; run 'witness verify' on it")
			}
			return exitcode.New(exitcode.Failure, err, "")
		}
		if rd.Partial() {
			return exitcode.New(exitcode.Incomplete, fmt.Errorf("events: %s:%d: the last line has no trailing newline (cut off)", name, rd.Line()), "the event log is truncated")
		}
		if ev.Kind == eventlog.KindMessage {
			if field, err := ValidateMessage(ev.Message); err != nil {
				return exitcode.New(exitcode.Tampered, &eventlog.ParseError{File: name, Line: rd.Line(), Field: field, Err: err}, "see docs/formats/firewall.md for the message event fields")
			}
			c := Candidate{Event: ev.ID, Message: *ev.Message, ts: ev.TS, cause: ev.Cause}
			if deriver != nil {
				c.pending = deriver.pendingIntents()
			}
			if err := fn(c); err != nil {
				return err
			}
			continue
		}
		if deriver != nil {
			msgs, err := deriver.derive(ev)
			if err != nil {
				return exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Line: rd.Line(), Err: err}, "check the mapping file's JSON paths against the tool payloads")
			}
			for _, m := range msgs {
				if m.ts == "" { // a send keeps its call's time and cause
					m.ts, m.cause = ev.TS, ev.ID
				}
				m.pending = deriver.pendingIntents()
				if err := fn(m); err != nil {
					return err
				}
			}
		}
	}
}

// EvaluateOptions configures an evaluation.
type EvaluateOptions struct {
	Policy     *Policy
	Provider   Provider // nil: unavailable
	LocalAgent string   // "" infers it (docs/formats/firewall.md)
	Mapping    *Mapping // optional: derive messages from tool calls too
	Timestamp  string   // RFC 3339 capture time (ATW_WITNESS_TS), "" for none
	Audit      io.Writer
	// Signers sign the audit snapshot: one signature record each, after
	// the complete record (docs/formats/firewall.md, section 5).
	Signers []keyring.Signer
	// Each is called with every check, in order (optional).
	Each func(*Check) error
	// Timeline, when set, re-evaluates each message under the installation
	// its policy history made active at the message's time (EvaluateFile
	// only; its findings are appended to Timeline.Findings).
	Timeline *Timeline
	// Elapsed, when set, gives each check the duration the evidence
	// recorded for it (RecordedProvider.Elapsed), so the timing rules that
	// need a check's duration apply (Runner.Elapsed).
	Elapsed func(event string) time.Duration
	// Closes, when set, are the close times of each operation in the whole
	// log (Runner.Closes); EvaluateFile reads them in its first pass.
	Closes map[string]time.Time
}

// Summary counts the outcomes of an evaluation.
type Summary struct {
	ActiveRevision string         `json:"activeRevision"`
	SnapshotID     string         `json:"snapshotId"`
	LocalAgent     string         `json:"localAgent"`
	Mode           string         `json:"mode"`
	Checks         int            `json:"checks"`
	Dispositions   map[string]int `json:"dispositions"`
	Reasons        map[string]int `json:"reasons"`
}

// EvaluateFile reads the event log at path twice: once to digest it and
// infer the local agent, once to check every message. Memory is bounded by
// the history windows (maximumHistoryRecords per conversation).
func EvaluateFile(path string, opts EvaluateOptions) (*Summary, error) {
	open := func() (*os.File, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, exitcode.Input("read events", err, "check the path given to --events")
		}
		return f, nil
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	local := opts.LocalAgent
	var firstIncomingRecipients []string
	if opts.Closes == nil {
		opts.Closes = map[string]time.Time{}
	}
	err = ForEachMessage(io.TeeReader(f, h), path, opts.Mapping, func(c Candidate) error {
		CloseTimes(opts.Closes, c)
		if local == "" && c.Message.Direction == Outgoing {
			local = c.Message.Sender
		}
		if firstIncomingRecipients == nil && c.Message.Direction == Incoming {
			firstIncomingRecipients = append([]string{}, c.Message.Recipients...)
		}
		return nil
	})
	if err == nil {
		_, err = io.Copy(h, f)
	}
	f.Close()
	if err != nil {
		return nil, err
	}
	if local == "" {
		if len(firstIncomingRecipients) == 1 {
			local = firstIncomingRecipients[0]
		}
	}
	if local == "" {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("evaluate %s: cannot tell which agent is ours: no outgoing message and no incoming message with a single recipient", path), "name our agent with --agent ID")
	}
	opts.LocalAgent = local
	eventsDigest := hex.EncodeToString(h.Sum(nil))
	if opts.Timeline != nil {
		return evaluateOverTime(path, eventsDigest, opts) // activation.go
	}
	f, err = open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Evaluate(f, path, eventsDigest, opts)
}

// SnapshotID derives the snapshot id from the installation, the events and
// the capture time: "snap_" and 32 hex characters.
func SnapshotID(activeRevision, eventsDigest, ts string) string {
	b, _ := canon.Marshal(map[string]string{"activeRevision": activeRevision, "events": eventsDigest, "capturedAt": ts})
	return "snap_" + sha256Hex(b)[:32]
}

// Evaluate checks every message read from r (an event log named name whose
// sha256 is eventsDigest) and, when opts.Audit is set, writes the audit
// snapshot.
func Evaluate(r io.Reader, name, eventsDigest string, opts EvaluateOptions) (*Summary, error) {
	p := opts.Policy
	eng, err := NewEngine(p, opts.Provider, opts.LocalAgent, opts.Timestamp)
	if err != nil {
		return nil, err
	}
	sum := &Summary{ActiveRevision: eng.Revision(), LocalAgent: opts.LocalAgent, Mode: p.Mode,
		Dispositions: map[string]int{}, Reasons: map[string]int{}}
	sum.SnapshotID = SnapshotID(eng.Revision(), eventsDigest, opts.Timestamp)
	var aw *AuditWriter
	if opts.Audit != nil {
		aw = NewAuditWriter(opts.Audit, sum.SnapshotID)
		if err := aw.Start(opts.Timestamp); err != nil {
			return nil, err
		}
	}
	prov := eng.Provider.Provenance()
	inst := func(dir string) AuditInstall {
		return AuditInstall{ActiveRevision: eng.Revision(), Mode: p.Mode, DecisionProvider: p.DecisionProvider, Provider: prov, Chain: eng.Chain(dir)}
	}
	instIn, instOut := inst(Incoming), inst(Outgoing)
	run := NewRunner(eng) // the daemon's windows, collective tables and timing rules
	run.Elapsed, run.Closes = opts.Elapsed, opts.Closes
	err = ForEachMessage(r, name, opts.Mapping, func(c Candidate) error {
		chks, err := run.Step(c)
		if err != nil {
			return exitcode.New(exitcode.Tampered, fmt.Errorf("%s: %w", name, err), "")
		}
		for _, chk := range chks {
			install := func() AuditInstall {
				if chk.Input.Direction == Outgoing {
					return instOut
				}
				return instIn
			}
			if err := emitCheck(sum, aw, install, opts.Each, chk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if aw != nil {
		added := []string{}
		if p.English != nil {
			for _, r := range p.English.InitialRules {
				added = append(added, r.ID)
			}
		}
		if err := aw.Activation(ActivationRecord{ActivatedAt: unixMillis(opts.Timestamp), ActiveRevision: eng.Revision(), AddedRuleIDs: added, RemovedRuleIDs: []string{}}); err != nil {
			return nil, err
		}
		if err := aw.Complete(); err != nil {
			return nil, err
		}
		if err := aw.Sign(opts.Signers...); err != nil {
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
	}
	return sum, nil
}

// emitCheck counts a check in the summary, writes it to the audit (when
// one is written) under the installation install names, and hands it to
// each: the one ending of every evaluation loop.
func emitCheck(sum *Summary, aw *AuditWriter, install func() AuditInstall, each func(*Check) error, chk *Check) error {
	sum.Checks++
	sum.Dispositions[chk.Decision.Disposition]++
	sum.Reasons[chk.Decision.Reason]++
	if aw != nil {
		if err := aw.Check(chk, install()); err != nil {
			return exitcode.New(exitcode.Failure, err, "")
		}
	}
	if each != nil {
		return each(chk)
	}
	return nil
}

func unixMillis(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
