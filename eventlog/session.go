package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/version"
)

// HeaderFormat is the value of Header.Format.
const HeaderFormat = "witness-events"

// Pairing rules named in Header.Pairing.
const (
	PairingJSONRPCID            = "jsonrpc-id"              // responses name their call by the exact JSON-RPC id
	PairingEarliestOpenSameTool = "earliest-open-same-tool" // imports: a response pairs with the earliest open call of its tool
)

// EnvTS is the environment variable that freezes every timestamp witness writes.
const EnvTS = "ATW_WITNESS_TS"

// Timestamp returns ATW_WITNESS_TS when getenv gives a non-empty value, else
// the current UTC time in the format agent-trace-witness 0.1.0 writes
// (Python isoformat: "2006-01-02T15:04:05[.ffffff]+00:00").
func Timestamp(getenv func(string) string) string {
	if getenv != nil {
		if ts := getenv(EnvTS); ts != "" {
			return ts
		}
	}
	return FormatTime(time.Now())
}

// FormatTime formats t in UTC as Python's isoformat does.
func FormatTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 != 0 {
		return t.Format("2006-01-02T15:04:05.000000+00:00")
	}
	return t.Format("2006-01-02T15:04:05+00:00")
}

// SessionID derives the session id of a log from its header and the ts of
// its session_start line: the first 32 hex characters of the sha256 of the
// canonical JSON of {"header": h, "ts": ts}. With ATW_WITNESS_TS frozen, the
// same session gives the same id, and so the same bytes.
func SessionID(h *Header, ts string) (string, error) {
	if h == nil {
		return "", errors.New("session id: no header")
	}
	b, err := canon.Marshal(struct {
		Header *Header `json:"header"`
		TS     string  `json:"ts"`
	}{h, ts})
	if err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:32], nil
}

// StartLog begins a new event log on w: it fills the header's format and
// witness version when empty, derives the session id and writes the
// session_start line with the given ts and source (observed when empty).
func StartLog(w io.Writer, h *Header, ts string, source Source) (*Writer, error) {
	if h == nil {
		h = &Header{}
	}
	if h.Format == "" {
		h.Format = HeaderFormat
	}
	if h.WitnessVersion == "" {
		h.WitnessVersion = version.Version
	}
	if h.Pairing == "" {
		h.Pairing = PairingJSONRPCID
	}
	if source == "" {
		source = SourceObserved
	}
	id, err := SessionID(h, ts)
	if err != nil {
		return nil, err
	}
	lw := NewWriter(w, id)
	if err := lw.Append(&Event{Kind: KindSessionStart, TS: ts, Source: source, Header: h}); err != nil {
		return nil, fmt.Errorf("start log: %w", err)
	}
	return lw, nil
}

// PayloadDigest returns the canonical JSON of the payload and its sha256 hex,
// which is what payload_sha256 holds.
func PayloadDigest(payload []byte) (json.RawMessage, string, error) {
	c, err := canon.Transform(payload)
	if err != nil {
		return nil, "", fmt.Errorf("payload: %w", err)
	}
	sum := sha256.Sum256(c)
	return c, hex.EncodeToString(sum[:]), nil
}

// SetPayload stores v (any JSON-marshalable value, or JSON text as
// json.RawMessage) as e's payload in canonical form, with its sha256.
func SetPayload(e *Event, v any) error {
	var raw []byte
	switch t := v.(type) {
	case json.RawMessage:
		raw = t
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		raw = b
	}
	c, h, err := PayloadDigest(raw)
	if err != nil {
		return err
	}
	e.Payload, e.PayloadSHA256 = c, h
	return nil
}

// fillPayloadHash makes the payload canonical and fills or checks its hash.
func fillPayloadHash(e *Event) error {
	if len(e.Payload) == 0 {
		return nil
	}
	c, h, err := PayloadDigest(e.Payload)
	if err != nil {
		return err
	}
	if e.PayloadSHA256 != "" && e.PayloadSHA256 != h {
		return fmt.Errorf("payload_sha256 %s does not match the payload (sha256 %s)", e.PayloadSHA256, h)
	}
	if !bytes.Equal(c, e.Payload) {
		e.Payload = c
	}
	e.PayloadSHA256 = h
	return nil
}
