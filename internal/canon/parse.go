package canon

import (
	"bytes"
	"fmt"
	"sort"
	"unicode/utf8"
)

// maxDepth bounds nesting (as encoding/json does) so hostile input cannot
// exhaust the stack.
const maxDepth = 10000

// parser is a strict single-pass JSON parser (RFC 8259) that writes the
// canonical form as it goes.
type parser struct {
	data []byte
	pos  int
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("canonical json: "+format+" at offset %d", append(args, p.pos)...)
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

type member struct {
	key string
	val []byte
}

func (p *parser) value(buf *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return p.errf("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.data) {
		return p.errf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		p.pos++
		p.ws()
		var members []member
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			buf.WriteString("{}")
			return nil
		}
		for {
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return p.errf("expected an object key")
			}
			k, err := p.str()
			if err != nil {
				return err
			}
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return p.errf("expected ':' after object key")
			}
			p.pos++
			p.ws()
			var vb bytes.Buffer
			if err := p.value(&vb, depth+1); err != nil {
				return err
			}
			members = append(members, member{k, vb.Bytes()})
			p.ws()
			if p.pos >= len(p.data) {
				return p.errf("unexpected end of input in object")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == '}' {
				p.pos++
				break
			}
			return p.errf("expected ',' or '}' in object")
		}
		sort.Slice(members, func(i, j int) bool { return lessUTF16(members[i].key, members[j].key) })
		for i := 1; i < len(members); i++ {
			if members[i].key == members[i-1].key {
				return fmt.Errorf("canonical json: duplicate object key %q", members[i].key)
			}
		}
		buf.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, m.key)
			buf.WriteByte(':')
			buf.Write(m.val)
		}
		buf.WriteByte('}')
		return nil
	case c == '[':
		p.pos++
		p.ws()
		buf.WriteByte('[')
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			buf.WriteByte(']')
			return nil
		}
		for first := true; ; first = false {
			if !first {
				buf.WriteByte(',')
			}
			p.ws()
			if err := p.value(buf, depth+1); err != nil {
				return err
			}
			p.ws()
			if p.pos >= len(p.data) {
				return p.errf("unexpected end of input in array")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == ']' {
				p.pos++
				break
			}
			return p.errf("expected ',' or ']' in array")
		}
		buf.WriteByte(']')
		return nil
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		writeString(buf, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := p.number()
		if err != nil {
			return err
		}
		s, err := FormatNumber(lit)
		if err != nil {
			return err
		}
		buf.WriteString(s)
		return nil
	case c == 't':
		return p.literal("true", buf)
	case c == 'f':
		return p.literal("false", buf)
	case c == 'n':
		return p.literal("null", buf)
	}
	return p.errf("unexpected character %q", p.data[p.pos])
}

func (p *parser) literal(word string, buf *bytes.Buffer) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return p.errf("invalid literal")
	}
	p.pos += len(word)
	buf.WriteString(word)
	return nil
}

// number scans a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (string, error) {
	start := p.pos
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return "", p.errf("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return "", p.errf("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return "", p.errf("invalid number: no digits in exponent")
		}
	}
	return string(d[start:p.pos]), nil
}

// str decodes the string literal at p.pos: escapes resolved, UTF-8
// validated, raw control characters and lone surrogates refused.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	d := p.data
	start := p.pos
	// Fast path: no escapes, all ASCII printable or valid UTF-8.
	for p.pos < len(d) {
		c := d[p.pos]
		if c == '"' {
			s := d[start:p.pos]
			if !utf8.Valid(s) {
				return "", p.errf("string is not valid UTF-8")
			}
			p.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	out := append([]byte(nil), d[start:p.pos]...)
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(out) {
				return "", p.errf("string is not valid UTF-8")
			}
			return string(out), nil
		case c < 0x20:
			return "", p.errf("control character in string")
		case c == '\\':
			var e Escape
			out, e = AppendEscape(out, d[p.pos:])
			switch e.Status {
			case EscapeEOF:
				return "", p.errf("unexpected end of input in string")
			case EscapeBadHex:
				p.pos += 2 // errors point past the "\u" as they always have
				return "", p.errf(`invalid \u escape`)
			case EscapeInvalid:
				p.pos += 2
				return "", p.errf("invalid escape \\%c", e.R)
			case EscapeLone:
				p.pos += e.N
				return "", p.errf(`lone UTF-16 surrogate escape \u%04x`, e.R)
			}
			p.pos += e.N
		default:
			out = append(out, c)
			p.pos++
		}
	}
	return "", p.errf("unexpected end of input in string")
}

// Hex4 decodes the 4 hex digits of a \uXXXX escape at the start of b, or
// returns -1. It is the one such decoder of the witness's JSON readers.
func Hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			n |= int(c-'A') + 10
		default:
			return -1
		}
	}
	return n
}
