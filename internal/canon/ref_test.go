package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"
)

// transformRef is the first, encoding/json-token-based implementation of
// Transform, kept as a reference: FuzzTransformDifferential checks that the
// hand-written parser agrees with it byte for byte.
func transformRef(raw []byte) ([]byte, error) {
	if err := checkText(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := refValue(dec, &buf); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("canonical json: trailing data after value")
	}
	return buf.Bytes(), nil
}

func refValue(dec *json.Decoder, buf *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("canonical json: %w", err)
	}
	return refToken(dec, tok, buf)
}

func refToken(dec *json.Decoder, tok json.Token, buf *bytes.Buffer) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var members []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("canonical json: %w", err)
				}
				k, ok := kt.(string)
				if !ok {
					return fmt.Errorf("canonical json: object key is not a string")
				}
				if seen[k] {
					return fmt.Errorf("canonical json: duplicate object key %q", k)
				}
				seen[k] = true
				var vb bytes.Buffer
				if err := refValue(dec, &vb); err != nil {
					return err
				}
				members = append(members, member{k, vb.Bytes()})
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("canonical json: %w", err)
			}
			sort.Slice(members, func(i, j int) bool { return lessUTF16(members[i].key, members[j].key) })
			buf.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := writeString(buf, m.key); err != nil {
					return err
				}
				buf.WriteByte(':')
				buf.Write(m.val)
			}
			buf.WriteByte('}')
			return nil
		case '[':
			buf.WriteByte('[')
			first := true
			for dec.More() {
				if !first {
					buf.WriteByte(',')
				}
				first = false
				if err := refValue(dec, buf); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("canonical json: %w", err)
			}
			buf.WriteByte(']')
			return nil
		}
		return fmt.Errorf("canonical json: unexpected delimiter %q", t)
	case string:
		return writeString(buf, t)
	case json.Number:
		s, err := FormatNumber(string(t))
		if err != nil {
			return err
		}
		buf.WriteString(s)
		return nil
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
		return nil
	case nil:
		buf.WriteString("null")
		return nil
	}
	return fmt.Errorf("canonical json: unexpected token %T", tok)
}

// checkText refuses JSON text that is not valid UTF-8 or whose strings hold
// a \u escape of a lone UTF-16 surrogate. encoding/json would silently turn
// both into U+FFFD, so two different inputs would canonicalize to the same
// bytes; RFC 8785 (via I-JSON) forbids lone surrogates.
func checkText(raw []byte) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("canonical json: input is not valid UTF-8")
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return nil // the decoder reports the truncation
			}
			if raw[i+1] != 'u' {
				i++
				continue
			}
			u := Hex4(raw[i+2:])
			switch {
			case u >= 0xD800 && u <= 0xDBFF:
				if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if l := Hex4(raw[i+8:]); l >= 0xDC00 && l <= 0xDFFF {
						i += 11
						continue
					}
				}
				return fmt.Errorf("canonical json: lone UTF-16 surrogate escape \\u%04x", u)
			case u >= 0xDC00 && u <= 0xDFFF:
				return fmt.Errorf("canonical json: lone UTF-16 surrogate escape \\u%04x", u)
			}
			i += 5
		}
	}
	return nil
}
