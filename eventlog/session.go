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
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/version"
)

// headerFormat is the value of Header.Format.
const headerFormat = "witness-events"

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
		h.Format = headerFormat
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

// payloadSHA256 is PayloadDigest's hash alone (the same hex, an error
// exactly when PayloadDigest fails): a payload that is already in
// canonical form (isCanonical, the common case of a line witness wrote) is
// hashed as it is, without re-encoding it.
func payloadSHA256(payload []byte) (string, error) {
	if isCanonical(payload) {
		sum := sha256.Sum256(payload)
		return hex.EncodeToString(sum[:]), nil
	}
	_, h, err := PayloadDigest(payload)
	return h, err
}

// canonFastDepth bounds isCanonical's nesting; deeper payloads take
// canon.Transform, which applies the one nesting limit.
const canonFastDepth = 64

// isCanonical reports whether b is JSON text that canon.Transform returns
// unchanged. It is conservative: true only for text with no whitespace,
// strings with canonical escapes and valid UTF-8, integers of at most 15
// digits (no -0), literals, and objects whose keys are ASCII without
// escapes in strictly increasing order; anything else (floats, other
// keys, deep nesting, any doubt) is false and goes to canon.Transform.
func isCanonical(b []byte) bool {
	i, ok := canonValue(b, 0, 0)
	return ok && i == len(b)
}

// canonValue checks the value at b[i:] and returns the index after it.
//
// Its cyclomatic complexity (about 43) is that of a hand-written JSON
// scanner: one arm per byte class of the grammar (literals, numbers,
// strings with escapes, arrays, objects with ordered keys); splitting it
// per class would pass the index and depth around for no clarity.
func canonValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > canonFastDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return canonString(b, i)
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for first := true; ; first = false {
			ks := i
			ke, ok := canonKey(b, i)
			if !ok {
				return i, false
			}
			key := b[ks+1 : ke-1]
			if !first && bytes.Compare(prev, key) >= 0 {
				return i, false
			}
			prev = key
			if ke >= len(b) || b[ke] != ':' {
				return i, false
			}
			if i, ok = canonValue(b, ke+1, depth+1); !ok {
				return i, false
			}
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		s := i
		if c == '-' {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		n := i - d
		switch {
		case n == 0 || n > 15:
			return i, false
		case b[d] == '0' && (n > 1 || d > s): // leading zero, or -0
			return i, false
		case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
			return i, false
		}
		return i, true
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return i, false
}

// canonKey checks an object key: a string of printable ASCII without
// escapes (UTF-16 order is then byte order).
func canonKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return i, false
		}
	}
	return i, false
}

// canonString checks a string: valid UTF-8, no raw control characters,
// only the escapes canon writes (\" \\ \b \f \n \r \t, and \u00xx in
// lowercase hex for the other controls).
func canonString(b []byte, i int) (int, bool) {
	s := i + 1
	ascii := true
	for i++; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[s:i]) {
				return i, false
			}
			return i + 1, true
		case c < 0x20:
			return i, false
		case c >= 0x80:
			ascii = false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(b) || b[i+2] != '0' || b[i+3] != '0' || (b[i+4] != '0' && b[i+4] != '1') {
					return i, false
				}
				h := b[i+5]
				var v byte
				switch {
				case h >= '0' && h <= '9':
					v = h - '0'
				case h >= 'a' && h <= 'f':
					v = h - 'a' + 10
				default:
					return i, false
				}
				v += (b[i+4] - '0') << 4
				switch v {
				case '\b', '\f', '\n', '\r', '\t':
					return i, false // canon writes the short escape
				}
				i += 5
			default:
				return i, false
			}
		}
	}
	return i, false
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
