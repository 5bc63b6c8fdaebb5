package verify

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// AnchorOptions say how a session's anchoring in a transparency log is
// checked (docs/design/transparency.md).
type AnchorOptions struct {
	// Log is the log at hand (a folder or a served log); nil checks the
	// bundle beside the events offline: inclusion and checkpoint only.
	Log bundle.Log
	// LogKey is the log's signed-note verifier key pinned by the user
	// (--log-key). With Log, the log's checkpoint must verify under it and
	// a bundle must name it. When set, TrustedLogKeys are not consulted.
	LogKey string
	// TrustedLogKeys are the log keys a trust file pins (its log_keys): a
	// bundle or a log whose key is one of them is pinned; one whose origin
	// is theirs but whose key is not is tampered.
	TrustedLogKeys []string
	// NamedKey is the key the log at hand names for itself (its folder's
	// configuration, or GET /log-key): never trusted, only compared with
	// the pinned keys. A log (a fork) can name any key; an anchor under a
	// key nobody pinned is unauthenticated, never verified.
	NamedKey string
	// Witnesses and Quorum: at least Quorum distinct trusted witnesses
	// (told apart by key material) must have cosigned the bundle's
	// checkpoint; fewer is a violation.
	Witnesses []witness
	Quorum    int
	// Context bounds the reads of the log (default context.Background()).
	Context context.Context
}

// witness is a trusted tlog witness (bundle.Witness).
type witness = bundle.Witness

// checkAnchoring checks that the last session end (or checkpoint) of the
// event log is anchored: its bundle beside the events verifies (inclusion,
// checkpoint signature, cosignature quorum), and, with the log at hand, the
// log holds no later entry of the session (a log cut back to an earlier
// checkpoint is tampered) and holds this one (a session that claims
// anchoring but has no entry is incomplete). Every log key must be pinned
// (o.LogKey or o.TrustedLogKeys): a log or bundle under a key nobody
// pinned is unauthenticated when anchoring is asked for (a log, a pinned
// key or a quorum), a notice otherwise; under another key than the one
// pinned for its origin it is tampered. When anchoring is not asked for
// (o nil, or trust-file keys only), it runs only when bundles are beside
// the events. It returns an error only when no verdict can be reached
// (the log cannot be read).
func checkAnchoring(r *Report, events string, o *AnchorOptions) error {
	if events == "" || events == "-" {
		if o.asked() {
			r.markRan(checkAnchor)
			r.notCheckable = setReason(r.notCheckable, checkAnchor, "the event log was read from standard input: no bundle beside it")
		}
		return nil
	}
	paths, err := bundle.Find(events)
	if err != nil {
		return err
	}
	if !o.asked() && len(paths) == 0 {
		return nil
	}
	if o == nil {
		o = &AnchorOptions{}
	}
	r.markRan(checkAnchor)
	add := anchorAdder(r)
	entry, err := bundle.EntryOfFile(events)
	if err != nil {
		if errors.Is(err, bundle.ErrNoEnd) {
			r.notCheckable = setReason(r.notCheckable, checkAnchor, "the log has no session end to anchor")
			return nil
		}
		if exitcode.Of(err) == exitcode.Usage || exitcode.Of(err) == exitcode.Failure {
			return err
		}
		// a malformed log: the chain check says so
		r.notCheckable = setReason(r.notCheckable, checkAnchor, "the event log could not be read")
		return nil
	}
	want := bundle.Path(events, entry.Count)
	own, err := readBundles(paths, entry, want, add)
	if err != nil {
		return err
	}
	known := checkOwnBundle(own, entry, want, o, add)
	if own == nil && o.Quorum > 0 {
		add(classIncomplete, "anchor-quorum", events, fmt.Sprintf("no bundle %s beside the events carries a cosigned checkpoint for --log-quorum %d", want, o.Quorum))
	}
	if o.Log == nil {
		if own == nil {
			add(classIncomplete, "anchor-missing", events, fmt.Sprintf("the last end (%d lines) has no bundle %s and no log was given (--log) to look it up", entry.Count, want))
		} else {
			add(ClassNotice, "anchor-offline", want, "offline: without --log, a later entry of this session in the log (a cut-back file) cannot be ruled out")
		}
		return nil
	}
	return checkLog(o, entry, events, own, known, add)
}

// findingAdder adds a finding of the anchoring check.
type findingAdder func(class Class, code, file, msg string)

// anchorAdder adds anchoring findings to r, with the severity of their
// class.
func anchorAdder(r *Report) findingAdder {
	return func(class Class, code, file, msg string) {
		sev := SevError
		switch class {
		case ClassNotice:
			sev = sevNotice
		case classViolation:
			sev = SevWarning
		}
		r.Findings = append(r.Findings, Finding{Check: checkAnchor, Code: code, Severity: sev, Class: class, File: file, Message: msg})
	}
}

// readBundles reads the bundles beside the events (paths) and returns the
// one of the file's last end (at want; nil when there is none). A bundle
// that does not parse, anchors another session or a longer history of
// this file (the file was cut back) is tampered, under any log key: the
// bundles are part of the evidence.
func readBundles(paths []string, entry bundle.Entry, want string, add findingAdder) (*bundle.Bundle, error) {
	var own *bundle.Bundle
	for _, p := range paths {
		b, err := bundle.ReadFile(p)
		if err != nil {
			if exitcode.Of(err) == exitcode.Tampered {
				add(classTampered, "anchor-bundle-invalid", p, err.Error())
				continue
			}
			return nil, err
		}
		if b.Entry.Session != entry.Session {
			add(classTampered, "anchor-bundle-mismatch", p, fmt.Sprintf("the bundle anchors session %s, not this log's %s", b.Entry.Session, entry.Session))
			continue
		}
		if b.Entry.Count > entry.Count {
			add(classTampered, "anchor-cut-back", p, fmt.Sprintf("a bundle beside the events anchors an end after %d lines, but the log ends after %d: it was cut back to an earlier checkpoint", b.Entry.Count, entry.Count))
		}
		if p == want {
			own = b
		}
	}
	return own, nil
}

// checkLog checks the log at hand (o.Log) for the file's last end: only
// under a pinned key (an unpinned log is unauthenticated and not read
// further, a log naming another key than the pinned one is tampered),
// then the authenticated lookup of the session's latest entry from the
// bundle's index (known: the bundle's checkpoint, when it verified under
// a pinned key).
func checkLog(o *AnchorOptions, entry bundle.Entry, events string, own *bundle.Bundle, known *bundle.Checkpoint, add findingAdder) error {
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	key, pinned := o.pin(o.NamedKey)
	switch {
	case !pinned:
		add(classUnauthenticated, "anchor-log-unpinned", events, fmt.Sprintf("the log names its key %s, but no log key is pinned: a log with its own key (a fork) would answer just the same; if this is the log you trust, pin its key with --log-key or in the trust file's log_keys (--trust)", o.NamedKey))
		return nil
	case o.NamedKey != "" && o.NamedKey != key:
		add(classTampered, "anchor-log-key", events, fmt.Sprintf("the log names its key %s, not the pinned %s: it is not the log you pinned", o.NamedKey, key))
		return nil
	}
	from := uint64(0)
	if known != nil {
		from = own.Index
	}
	res, err := bundle.LookupSession(ctx, o.Log, key, entry.Session, from, known)
	switch {
	case errors.Is(err, bundle.ErrInconsistent), errors.Is(err, bundle.ErrCheckpoint):
		add(classTampered, "anchor-log-inconsistent", events, err.Error())
		return nil
	case err != nil:
		return exitcode.New(exitcode.Failure, fmt.Errorf("--log: %w", err), "check that the log folder or URL is readable")
	}
	l := res.Latest
	switch {
	case l == nil:
		add(classIncomplete, "anchor-missing", events, fmt.Sprintf("the log (size %d) holds no entry for session %s", res.Checkpoint.Size, entry.Session))
	case l.Count > entry.Count:
		add(classTampered, "anchor-cut-back", events, fmt.Sprintf("the log holds a later end of this session at index %d (after %d lines, head %s), but the file ends after %d lines: it was cut back or events are missing", res.LatestIndex, l.Count, l.Head, entry.Count))
	case l.Count == entry.Count && *l != entry:
		add(classTampered, "anchor-mismatch", events, fmt.Sprintf("the log's entry at index %d for the end after %d lines differs from the file's (head %s, not %s)", res.LatestIndex, l.Count, l.Head, entry.Head))
	case l.Count < entry.Count:
		add(classIncomplete, "anchor-missing", events, fmt.Sprintf("the log's latest entry of this session ends after %d lines; the file's last end (%d lines) was never anchored", l.Count, entry.Count))
	default:
		add(ClassNotice, "anchor-latest", events, fmt.Sprintf("the log (size %d; entries read from index %d: %d) holds no later end of this session than index %d", res.Checkpoint.Size, from, res.Scanned, res.LatestIndex))
	}
	return nil
}

// checkOwnBundle checks the bundle of the file's last end (own, at want;
// nil when there is none): its checkpoint under the pinned log key, its
// entry, the witnesses' cosignatures. It returns the bundle's checkpoint
// when the bundle verifies under a pinned key (nil otherwise): only then
// may the log at hand be checked against it. A bundle under a key nobody
// pinned is a notice when anchoring was not asked for (the verdict is then
// the events' own, as without the bundle), unauthenticated when it was.
func checkOwnBundle(own *bundle.Bundle, entry bundle.Entry, want string, o *AnchorOptions, add findingAdder) *bundle.Checkpoint {
	if own == nil {
		return nil
	}
	key, pinned := o.pin(own.LogKey)
	cp, err := own.Verify(key)
	switch {
	case err != nil:
		add(classTampered, "anchor-bundle-invalid", want, err.Error())
		return nil
	case own.Entry != entry:
		add(classTampered, "anchor-bundle-mismatch", want, fmt.Sprintf("the bundle's entry (head %s) is not the log's last end (head %s)", own.Entry.Head, entry.Head))
		return nil
	}
	if err := checkQuorum(cp, o); err != nil {
		add(classTampered, "anchor-cosignature", want, err.Error())
	} else if o.Quorum > 0 {
		cs, _ := cp.Cosignatures(o.Witnesses)
		if n := bundle.DistinctWitnesses(notLog(cs, own.LogKey)); n < o.Quorum {
			add(classViolation, "anchor-quorum", want, fmt.Sprintf("%d distinct trusted witness(es) cosigned the checkpoint, fewer than --log-quorum %d", n, o.Quorum))
		}
	}
	if !pinned {
		class := ClassNotice
		if o.asked() {
			class = classUnauthenticated
		}
		add(class, "anchor-unpinned", want, fmt.Sprintf("the bundle's checkpoint (index %d of log %s, size %d) verifies only under the log key the bundle names itself (%s), which no one pinned: the anchor is not authenticated; pin the log's key with --log-key or in the trust file's log_keys (--trust)", own.Index, cp.Origin, cp.Size, own.LogKey))
		return nil
	}
	add(ClassNotice, "anchored", want, fmt.Sprintf("anchored at index %d of log %s (checkpoint size %d)", own.Index, cp.Origin, cp.Size))
	return cp
}

// notLog drops the cosignatures made with the log's own key material (the
// log's key listed as a witness too, under any name): a log does not
// witness itself, so its key counts for no witness quorum.
func notLog(cs []bundle.Cosignature, logKey string) []bundle.Cosignature {
	// name+hash+base64: the name has no '+', the base64 may
	parts := strings.SplitN(logKey, "+", 3)
	if len(parts) != 3 {
		return cs
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < 2 {
		return cs
	}
	pub := base64.StdEncoding.EncodeToString(raw[1:])
	out := cs[:0:0]
	for _, c := range cs {
		if c.Key != pub {
			out = append(out, c)
		}
	}
	return out
}

// asked reports whether anchoring was asked for (a log, a pinned key or a
// witness quorum); a trust file's log keys alone only pin.
func (o *AnchorOptions) asked() bool {
	return o != nil && (o.Log != nil || o.LogKey != "" || o.Quorum > 0)
}

// pin returns the pinned key to check a log or bundle that names the key
// named: --log-key when given; else the trust file's key equal to named,
// or one for the same origin (under which a checkpoint signed with named
// then fails: tampered). pinned is false when no key is pinned for it.
func (o *AnchorOptions) pin(named string) (key string, pinned bool) {
	if o.LogKey != "" {
		return o.LogKey, true
	}
	if slices.Contains(o.TrustedLogKeys, named) {
		return named, true
	}
	origin := keyOrigin(named)
	for _, k := range o.TrustedLogKeys {
		if origin != "" && keyOrigin(k) == origin {
			return k, true
		}
	}
	return "", false
}

// keyOrigin is the name (a log's origin) of a signed-note verifier key, or
// "" when it is not one.
func keyOrigin(vkey string) string {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return ""
	}
	return v.Name()
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
