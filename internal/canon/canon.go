package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal returns the canonical encoding of v. v may be any value that
// encoding/json can marshal; it is first encoded, then re-decoded with exact
// numbers and re-emitted canonically. A json.RawMessage or []byte is taken
// as JSON text (not base64-encoded as encoding/json would). Note that
// encoding/json replaces invalid UTF-8 in Go strings with U+FFFD; JSON text
// with invalid UTF-8 is refused.
func Marshal(v any) ([]byte, error) {
	var raw []byte
	switch t := v.(type) {
	case json.RawMessage:
		raw = t
	case []byte:
		// treat as JSON text
		raw = t
	default:
		var err error
		raw, err = json.Marshal(v)
		if err != nil {
			return nil, err
		}
	}
	return Transform(raw)
}

// Transform re-encodes the JSON text raw canonically. It refuses invalid
// JSON, trailing data, invalid UTF-8, lone surrogate escapes and duplicate
// object keys.
func Transform(raw []byte) ([]byte, error) {
	p := &parser{data: raw}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	p.ws()
	if err := p.value(&buf, 0); err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return nil, fmt.Errorf("canonical json: trailing data after value at offset %d", p.pos)
	}
	return buf.Bytes(), nil
}

// lessUTF16 orders keys by UTF-16 code units, as RFC 8785 requires. For keys
// made only of BMP characters this equals code-point (and UTF-8 byte) order,
// which is what Python's sort_keys does.
func lessUTF16(a, b string) bool {
	if isASCIIOrBMP(a) && isASCIIOrBMP(b) {
		return a < b
	}
	ua, ub := utf16Units(a), utf16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func isASCIIOrBMP(s string) bool {
	for _, r := range s {
		if r > 0xFFFF {
			return false
		}
	}
	return true
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r > 0xFFFF {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

const hexdigits = "0123456789abcdef"

// writeString writes s as a JSON string: '"' and '\\' escaped, the short
// escapes \b \f \n \r \t, other controls below U+0020 as \u00xx (lowercase
// hex), everything else (including <, >, &, U+2028, U+2029 and DEL) raw.
func writeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("canonical json: string is not valid UTF-8")
	}
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			buf.WriteString(`\"`)
		case c == '\\':
			buf.WriteString(`\\`)
		case c == '\b':
			buf.WriteString(`\b`)
		case c == '\f':
			buf.WriteString(`\f`)
		case c == '\n':
			buf.WriteString(`\n`)
		case c == '\r':
			buf.WriteString(`\r`)
		case c == '\t':
			buf.WriteString(`\t`)
		case c < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexdigits[c>>4])
			buf.WriteByte(hexdigits[c&0xF])
		default:
			buf.WriteByte(c)
		}
	}
	buf.WriteByte('"')
	return nil
}

// AppendString appends the canonical JSON encoding of the string s to dst.
// It writes the bytes writeString writes, straight into dst and a run of
// plain bytes at a time (the graph writers call it for every value).
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("canonical json: string is not valid UTF-8")
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// FormatNumber returns the canonical form of the JSON number literal lit.
// Integer literals whose magnitude is below 2^53 are written as exact
// decimals (as Python writes them); every other number is converted to an
// IEEE 754 double and written in the ECMAScript shortest form (RFC 8785 §3.2.2.3).
func FormatNumber(lit string) (string, error) {
	if isIntLiteral(lit) {
		if len(strings.TrimPrefix(lit, "-")) <= 16 {
			n, err := strconv.ParseInt(lit, 10, 64)
			if err == nil && n > -(1<<53) && n < (1<<53) {
				if n == 0 {
					return "0", nil // -0 becomes 0
				}
				return strconv.FormatInt(n, 10), nil
			}
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("canonical json: number %s is not representable", lit)
	}
	return FormatFloat(f), nil
}

func isIntLiteral(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatFloat writes f the way ECMAScript's Number.prototype.toString does,
// which is what RFC 8785 prescribes.
func FormatFloat(f float64) string {
	if f == 0 {
		return "0"
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	// shortest round-trip digits and exponent
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±xx
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to digits
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		m := digits[:1]
		if k > 1 {
			m += "." + digits[1:]
		}
		es := n - 1
		if es >= 0 {
			out = m + "e+" + strconv.Itoa(es)
		} else {
			out = m + "e-" + strconv.Itoa(-es)
		}
	}
	return sign + out
}
