package canon

import (
	"unicode/utf16"
	"unicode/utf8"
)

// EscapeStatus says how AppendEscape read an escape.
type EscapeStatus int

// The statuses of AppendEscape.
const (
	// EscapeOK: a valid escape, decoded.
	EscapeOK EscapeStatus = iota
	// EscapeEOF: the backslash is the last byte.
	EscapeEOF
	// EscapeBadHex: \u without four hex digits (Short says whether the
	// input ended first).
	EscapeBadHex
	// EscapeInvalid: a byte after the backslash that JSON does not allow.
	EscapeInvalid
	// EscapeLone: a UTF-16 surrogate escape without its pair; U+FFFD was
	// appended in its place, as JSON.parse-then-UTF-8 readers see it.
	EscapeLone
)

// Escape is what AppendEscape read: the bytes consumed, the status, and
// for EscapeLone the surrogate, for EscapeInvalid the byte.
type Escape struct {
	N      int
	Status EscapeStatus
	R      rune
	Short  bool // EscapeBadHex: the input ended within the four digits
}

// AppendEscape decodes the JSON string escape at the start of b (b[0] is
// the backslash) and appends its UTF-8 to dst. It is the one escape
// decoder of the witness's JSON string readers (the canonical parser and
// the strict wire reader): "\/" is "/", a surrogate pair is one rune, a
// lone surrogate is reported (and read as U+FFFD). On a status other than
// EscapeOK and EscapeLone, dst is returned unchanged.
func AppendEscape(dst, b []byte) ([]byte, Escape) {
	if len(b) < 2 {
		return dst, Escape{Status: EscapeEOF}
	}
	switch e := b[1]; e {
	case '"', '\\', '/':
		return append(dst, e), Escape{N: 2}
	case 'b':
		return append(dst, '\b'), Escape{N: 2}
	case 'f':
		return append(dst, '\f'), Escape{N: 2}
	case 'n':
		return append(dst, '\n'), Escape{N: 2}
	case 'r':
		return append(dst, '\r'), Escape{N: 2}
	case 't':
		return append(dst, '\t'), Escape{N: 2}
	case 'u':
	default:
		return dst, Escape{Status: EscapeInvalid, R: rune(e)}
	}
	r := Hex4(b[2:])
	if r < 0 {
		return dst, Escape{Status: EscapeBadHex, Short: len(b)-2 < 4}
	}
	switch {
	case r >= 0xD800 && r <= 0xDBFF:
		lo := -1
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			lo = Hex4(b[8:])
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return utf8.AppendRune(dst, utf8.RuneError), Escape{N: 6, Status: EscapeLone, R: rune(r)}
		}
		return utf8.AppendRune(dst, utf16.DecodeRune(rune(r), rune(lo))), Escape{N: 12}
	case r >= 0xDC00 && r <= 0xDFFF:
		return utf8.AppendRune(dst, utf8.RuneError), Escape{N: 6, Status: EscapeLone, R: rune(r)}
	}
	return utf8.AppendRune(dst, rune(r)), Escape{N: 6}
}
