package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// entryFormat is the format string of a log entry.
const entryFormat = "witness-tlog-entry/v1"

// Entry is what the log holds for one session end or checkpoint: enough to
// tell a later, longer history of the same session from the one a file shows.
type Entry struct {
	Session            string // the session id of every event line
	Count              int64  // end.count: the lines before the session_end
	Head               string // end.head: sha256 of the line before the end (the chain head)
	SealDigest         string // header.seal.digest; "" when the session is not bound to a seal
	EndSignatureDigest string // sha256 (hex) of the canonical JSON of end.signatures ("[]" when unsigned)
}

// Marshal returns the entry's canonical JSON: the bytes the log holds.
func (e Entry) Marshal() ([]byte, error) {
	m := map[string]any{
		"format":               entryFormat,
		"session":              e.Session,
		"count":                e.Count,
		"head":                 e.Head,
		"end_signature_digest": e.EndSignatureDigest,
	}
	if e.SealDigest != "" {
		m["seal_digest"] = e.SealDigest
	}
	return canon.Marshal(m)
}

// ParseEntry reads an entry (named name in errors). It refuses anything but
// the entry's canonical JSON, so one entry has one spelling and one leaf hash.
func ParseEntry(data []byte, name string) (Entry, error) {
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return Entry{}, err
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", root, &perr)
	e, err := readEntry(r, &perr)
	if err != nil {
		return Entry{}, err
	}
	b, err := e.Marshal()
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(b, data) {
		return Entry{}, fmt.Errorf("%s: entry is not in canonical JSON", name)
	}
	return e, nil
}

func readEntry(r *jsontree.ObjectReader, perr *error) (Entry, error) {
	if f := r.String("format", true); *perr == nil && f != entryFormat {
		r.Fail("format", fmt.Sprintf("want %q, got %q", entryFormat, f))
	}
	e := Entry{
		Session:            r.String("session", true),
		Count:              r.Int("count", true),
		Head:               r.String("head", true),
		EndSignatureDigest: r.String("end_signature_digest", true),
	}
	e.SealDigest, _ = r.OptString("seal_digest")
	r.Done()
	if *perr != nil {
		return Entry{}, *perr
	}
	switch {
	case e.Session == "":
		r.Fail("session", "must be non-empty")
	case e.Count < 1:
		r.Fail("count", "must be at least 1 (the session_start)")
	case !isHex64(e.Head):
		r.Fail("head", "want 64 lowercase hex digits")
	case !isHex64(e.EndSignatureDigest):
		r.Fail("end_signature_digest", "want 64 lowercase hex digits")
	case e.SealDigest != "" && !isHex64(e.SealDigest):
		r.Fail("seal_digest", "want 64 lowercase hex digits")
	}
	return e, *perr
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ErrNoEnd is returned by EntryOf for a log with no session_end: there is
// nothing to anchor.
var ErrNoEnd = errors.New("the log has no session_end to anchor")

// entryOf reads an event log and returns the entry of its last session_end
// (the session end, or the last checkpoint of a log left open). It does not
// verify the log: verify does, and an entry of a tampered log anchors
// nothing a verifier would accept.
func entryOf(r io.Reader, name string) (Entry, error) {
	fr := eventlog.NewFastReader(r, name)
	var e Entry
	found := false
	for {
		ev, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Entry{}, err
		}
		if ev.Kind == eventlog.KindSessionStart && ev.Header != nil && ev.Header.Seal != nil {
			e.SealDigest = ev.Header.Seal.Digest
		}
		if ev.Kind != eventlog.KindSessionEnd || ev.End == nil {
			continue
		}
		sigs := ev.End.Signatures
		if sigs == nil {
			sigs = []eventlog.Signature{}
		}
		b, err := canon.Marshal(sigs)
		if err != nil {
			return Entry{}, fmt.Errorf("%s:%d: $.end.signatures: %w", name, fr.Line(), err)
		}
		sum := sha256.Sum256(b)
		e.Session, e.Count, e.Head = ev.Session, ev.End.Count, ev.End.Head
		e.EndSignatureDigest = hex.EncodeToString(sum[:])
		found = true
	}
	if !found {
		return Entry{}, exitcode.New(exitcode.Incomplete, fmt.Errorf("%s: %w", name, ErrNoEnd),
			"end the session (capture ends it; 'witness capture append' without --keep-open writes an end) and anchor again")
	}
	return e, nil
}

// EntryOfFile is EntryOf over a file.
func EntryOfFile(path string) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, exitcode.Input("read event log", err, "check the path given to --events")
	}
	defer f.Close()
	return entryOf(f, path)
}
