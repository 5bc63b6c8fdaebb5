package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// jv is a JSON value that keeps object members in their order, so that a
// wire line can be re-encoded as it came, with only redacted values changed.
type jv struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jv
	str  string // string value or number literal
	b    bool
}

const maxJSONDepth = 10000

func parseJV(raw []byte) (*jv, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeJV(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeJV(dec *json.Decoder, depth int) (*jv, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jv{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				c, err := decodeJV(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, k)
				v.vals = append(v.vals, c)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		case '[':
			v := &jv{kind: 'a'}
			for dec.More() {
				c, err := decodeJV(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, c)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %q", t)
	case string:
		return &jv{kind: 's', str: t}, nil
	case json.Number:
		return &jv{kind: 'n', str: string(t)}, nil
	case bool:
		return &jv{kind: 'b', b: t}, nil
	case nil:
		return &jv{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %T", tok)
}

// encode writes v compactly, members in their order, strings with minimal
// escaping (as canonical JSON escapes them).
func (v *jv) encode(buf *bytes.Buffer) error {
	switch v.kind {
	case 'o':
		buf.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			b, err := canon.AppendString(nil, k)
			if err != nil {
				return err
			}
			buf.Write(b)
			buf.WriteByte(':')
			if err := v.vals[i].encode(buf); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case 'a':
		buf.WriteByte('[')
		for i, c := range v.vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.encode(buf); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case 's':
		b, err := canon.AppendString(nil, v.str)
		if err != nil {
			return err
		}
		buf.Write(b)
	case 'n':
		buf.WriteString(v.str)
	case 'b':
		if v.b {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	default:
		buf.WriteString("null")
	}
	return nil
}

func (v *jv) bytes() ([]byte, error) {
	var buf bytes.Buffer
	if err := v.encode(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// get returns the member k of an object.
func (v *jv) get(k string) *jv {
	if v.kind != 'o' {
		return nil
	}
	for i, kk := range v.keys {
		if kk == k {
			return v.vals[i]
		}
	}
	return nil
}
