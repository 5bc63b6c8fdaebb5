package cassette

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// appendRecord appends the JSON line of r (without its '\n') to b. It writes
// the same bytes encoding/json writes for wireRecord with HTML escaping off
// (TestAppendRecordMatchesEncodingJSON and FuzzAppendString check it), but
// without reflection or allocations, since the proxy writes one record
// before it forwards each line.
func appendRecord(b []byte, r *Record) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	dir := r.Dir
	if r.Life != "" {
		dir = r.Stream
	}
	if dir != "" {
		b = append(b, `,"dir":`...)
		b = appendString(b, string(dir))
	}
	if r.Life == "" && r.Dir != "" {
		b = append(b, `,"off":`...)
		b = strconv.AppendInt(b, r.Off, 10)
		if useText(r.Data) {
			b = append(b, `,"text":`...)
			b = appendString(b, r.Data)
		} else {
			b = append(b, `,"b64":"`...)
			b = base64.StdEncoding.AppendEncode(b, r.Data)
			b = append(b, '"')
		}
		if r.Partial {
			b = append(b, `,"partial":true`...)
		}
		if r.Cont {
			b = append(b, `,"cont":true`...)
		}
		if r.Redacted {
			b = append(b, `,"redacted":true,"n":`...)
			b = strconv.AppendInt(b, r.N, 10)
		}
		if r.LineSHA256 != "" {
			b = append(b, `,"line_bytes":`...)
			b = strconv.AppendInt(b, r.LineBytes, 10)
			b = append(b, `,"line_sha256":`...)
			b = appendString(b, r.LineSHA256)
		}
	}
	if r.T != 0 {
		b = append(b, `,"t":`...)
		b = strconv.AppendInt(b, r.T, 10)
	}
	for _, f := range []struct{ name, v string }{{`,"life":`, r.Life}, {`,"signal":`, r.Signal}, {`,"status":`, r.Status}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendString(b, f.v)
		}
	}
	if r.Code != nil {
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(*r.Code), 10)
	}
	if r.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendString(b, r.Detail)
	}
	return append(b, '}')
}

// useText reports whether data is written as "text" (valid UTF-8 whose JSON
// string is at most about twice as long as the bytes) rather than "b64".
// Bytes that escape badly (control characters become six bytes each) go to
// base64, so that a record is never much larger than the line it holds.
func useText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	n := 0
	for _, c := range data {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		case c == 0xe2:
			n += 2 // U+2028 and U+2029 (3 bytes) become 6; counting every 0xe2 overestimates safely
		default:
			n++
		}
	}
	return n <= 2*len(data)+64
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping off. s must be valid UTF-8 (invalid bytes become
// U+FFFD, as encoding/json does).
func appendString[T ~string | ~[]byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		var q [utf8.UTFMax]byte
		r, size := utf8.DecodeRune(q[:copy(q[:], s[i:])])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
