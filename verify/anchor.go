package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// AnchorOptions say how a session's anchoring in a transparency log is
// checked (docs/design/transparency.md).
type AnchorOptions struct {
	// Log is the log at hand (a folder or a served log); nil checks the
	// bundle beside the events offline: inclusion and checkpoint only.
	Log bundle.Log
	// LogKey is the log's signed-note verifier key. With Log, the log's
	// checkpoint must verify under it and a bundle must name it.
	LogKey string
	// Witnesses and Quorum: at least Quorum distinct trusted witnesses
	// (told apart by key material) must have cosigned the bundle's
	// checkpoint; fewer is a violation.
	Witnesses []Witness
	Quorum    int
	// Context bounds the reads of the log (default context.Background()).
	Context context.Context
}

// Witness is a trusted tlog witness (bundle.Witness).
type Witness = bundle.Witness

// CheckAnchoring checks that the last session end (or checkpoint) of the
// event log is anchored: its bundle beside the events verifies (inclusion,
// checkpoint signature, cosignature quorum), and, with the log at hand, the
// log holds no later entry of the session (a log cut back to an earlier
// checkpoint is tampered) and holds this one (a session that claims
// anchoring but has no entry is incomplete). With o nil it runs only when
// bundles are beside the events. It returns an error only when no verdict
// can be reached (the log cannot be read).
func CheckAnchoring(r *Report, events string, o *AnchorOptions) error {
	if events == "" || events == "-" {
		if o != nil {
			r.markRan(CheckAnchor)
			r.notCheckable = setReason(r.notCheckable, CheckAnchor, "the event log was read from standard input: no bundle beside it")
		}
		return nil
	}
	paths, err := bundle.Find(events)
	if err != nil {
		return err
	}
	if o == nil {
		if len(paths) == 0 {
			return nil
		}
		o = &AnchorOptions{}
	}
	r.markRan(CheckAnchor)
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	add := func(class Class, code, file, msg string) {
		sev := SevError
		switch class {
		case ClassNotice:
			sev = SevNotice
		case ClassViolation:
			sev = SevWarning
		}
		r.Findings = append(r.Findings, Finding{Check: CheckAnchor, Code: code, Severity: sev, Class: class, File: file, Message: msg})
	}
	entry, err := bundle.EntryOfFile(events)
	if err != nil {
		if errors.Is(err, bundle.ErrNoEnd) {
			r.notCheckable = setReason(r.notCheckable, CheckAnchor, "the log has no session end to anchor")
			return nil
		}
		if exitcode.Of(err) == exitcode.Usage || exitcode.Of(err) == exitcode.Failure {
			return err
		}
		// a malformed log: the chain check says so
		r.notCheckable = setReason(r.notCheckable, CheckAnchor, "the event log could not be read")
		return nil
	}
	// a bundle of a longer history of this file: the file was cut back
	want := bundle.Path(events, entry.Count)
	var own *bundle.Bundle
	for _, p := range paths {
		b, err := bundle.ReadFile(p)
		if err != nil {
			if exitcode.Of(err) == exitcode.Tampered {
				add(ClassTampered, "anchor-bundle-invalid", p, err.Error())
				continue
			}
			return err
		}
		if b.Entry.Session != entry.Session {
			add(ClassTampered, "anchor-bundle-mismatch", p, fmt.Sprintf("the bundle anchors session %s, not this log's %s", b.Entry.Session, entry.Session))
			continue
		}
		if b.Entry.Count > entry.Count {
			add(ClassTampered, "anchor-cut-back", p, fmt.Sprintf("a bundle beside the events anchors an end after %d lines, but the log ends after %d: it was cut back to an earlier checkpoint", b.Entry.Count, entry.Count))
		}
		if p == want {
			own = b
		}
	}
	var known *bundle.Checkpoint
	if own != nil {
		switch cp, err := own.Verify(o.LogKey); {
		case err != nil:
			add(ClassTampered, "anchor-bundle-invalid", want, err.Error())
		case own.Entry != entry:
			add(ClassTampered, "anchor-bundle-mismatch", want, fmt.Sprintf("the bundle's entry (head %s) is not the log's last end (head %s)", own.Entry.Head, entry.Head))
		default:
			known = cp
			if err := checkQuorum(cp, o); err != nil {
				add(ClassTampered, "anchor-cosignature", want, err.Error())
			} else if o.Quorum > 0 {
				cs, _ := cp.Cosignatures(o.Witnesses)
				if n := bundle.DistinctWitnesses(cs); n < o.Quorum {
					add(ClassViolation, "anchor-quorum", want, fmt.Sprintf("%d distinct trusted witness(es) cosigned the checkpoint, fewer than --log-quorum %d", n, o.Quorum))
				}
			}
			add(ClassNotice, "anchored", want, fmt.Sprintf("anchored at index %d of log %s (checkpoint size %d)", own.Index, cp.Origin, cp.Size))
		}
	} else if o.Quorum > 0 {
		add(ClassIncomplete, "anchor-quorum", events, fmt.Sprintf("no bundle %s beside the events carries a cosigned checkpoint for --log-quorum %d", want, o.Quorum))
	}
	if o.Log == nil {
		if own == nil {
			add(ClassIncomplete, "anchor-missing", events, fmt.Sprintf("the last end (%d lines) has no bundle %s and no log was given (--log) to look it up", entry.Count, want))
		} else {
			add(ClassNotice, "anchor-offline", want, "offline: without --log, a later entry of this session in the log (a cut-back file) cannot be ruled out")
		}
		return nil
	}
	from := uint64(0)
	if own != nil && known != nil {
		from = own.Index
	}
	res, err := bundle.LookupSession(ctx, o.Log, o.LogKey, entry.Session, from, known)
	switch {
	case errors.Is(err, bundle.ErrInconsistent), errors.Is(err, bundle.ErrCheckpoint):
		add(ClassTampered, "anchor-log-inconsistent", events, err.Error())
		return nil
	case err != nil:
		return exitcode.New(exitcode.Failure, fmt.Errorf("--log: %w", err), "check that the log folder or URL is readable")
	}
	l := res.Latest
	switch {
	case l == nil:
		add(ClassIncomplete, "anchor-missing", events, fmt.Sprintf("the log (size %d) holds no entry for session %s", res.Checkpoint.Size, entry.Session))
	case l.Count > entry.Count:
		add(ClassTampered, "anchor-cut-back", events, fmt.Sprintf("the log holds a later end of this session at index %d (after %d lines, head %s), but the file ends after %d lines: it was cut back or events are missing", res.LatestIndex, l.Count, l.Head, entry.Count))
	case l.Count == entry.Count && *l != entry:
		add(ClassTampered, "anchor-mismatch", events, fmt.Sprintf("the log's entry at index %d for the end after %d lines differs from the file's (head %s, not %s)", res.LatestIndex, l.Count, l.Head, entry.Head))
	case l.Count < entry.Count:
		add(ClassIncomplete, "anchor-missing", events, fmt.Sprintf("the log's latest entry of this session ends after %d lines; the file's last end (%d lines) was never anchored", l.Count, entry.Count))
	default:
		add(ClassNotice, "anchor-latest", events, fmt.Sprintf("the log (size %d; entries read from index %d: %d) holds no later end of this session than index %d", res.Checkpoint.Size, from, res.Scanned, res.LatestIndex))
	}
	return nil
}

func checkQuorum(cp *bundle.Checkpoint, o *AnchorOptions) error {
	if len(o.Witnesses) == 0 {
		return nil
	}
	_, err := cp.Cosignatures(o.Witnesses)
	return err
}

func setReason(m map[string]string, check, reason string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[check] = reason
	return m
}
