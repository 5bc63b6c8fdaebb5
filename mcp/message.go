package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Kind classifies a JSON-RPC line.
type Kind string

const (
	KindRequest      Kind = "request"
	KindNotification Kind = "notification"
	KindResponse     Kind = "response"
	KindInvalid      Kind = "invalid"
)

// Message is one classified JSON-RPC message. Every field is a slice of the
// exact bytes of the line: nothing is re-encoded.
type Message struct {
	Raw    []byte          // the whole line as received
	ID     json.RawMessage // the exact id token ("1", "\"a\"", "0", "null"), nil when absent
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
	Kind   Kind
}

// IsBatch reports whether the line holds a JSON array (a 2025-03-26 batch).
func IsBatch(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// Parse classifies one line. It returns a Message with Kind KindInvalid and a
// non-nil error when the line is not a valid JSON-RPC 2.0 message; Raw is
// always set. Parse never panics. Member names match exactly (case
// sensitive), a repeated envelope member is refused, and every field is a
// slice of line.
func Parse(line []byte) (*Message, error) {
	m := &Message{Raw: line, Kind: KindInvalid}
	if IsBatch(line) {
		return m, errors.New("a JSON-RPC batch (array) is not a single message")
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return m, fmt.Errorf("not JSON: %w", err)
	}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return m, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	var jsonrpc, method json.RawMessage
	i = skipWS(line, i+1)
	for i < len(line) && line[i] != '}' {
		kend := skipValue(line, i)
		key, err := unquoteKey(line[i:kend])
		if err != nil {
			return m, fmt.Errorf("member name: %w", err)
		}
		i = skipWS(line, kend)
		i = skipWS(line, i+1) // ':'
		vend := skipValue(line, i)
		raw := json.RawMessage(line[i:vend:vend])
		switch key {
		case "jsonrpc", "id", "method", "params", "result", "error":
			if seen[key] {
				return m, fmt.Errorf("field %q appears twice", key)
			}
			seen[key] = true
		}
		switch key {
		case "jsonrpc":
			jsonrpc = raw
		case "id":
			m.ID = raw
		case "method":
			method = raw
		case "params":
			m.Params = raw
		case "result":
			m.Result = raw
		case "error":
			m.Error = raw
		}
		i = skipWS(line, vend)
		if i < len(line) && line[i] == ',' {
			i = skipWS(line, i+1)
		}
	}
	return classify(m, jsonrpc, method)
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i in a
// buffer already known to be valid JSON.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

func unquoteKey(tok []byte) (string, error) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", errors.New("not a string")
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	err := json.Unmarshal(tok, &s)
	return s, err
}

// classify checks the envelope of a parsed object and sets its kind.
func classify(m *Message, jsonrpc, method json.RawMessage) (*Message, error) {
	if string(jsonrpc) != `"2.0"` {
		return m, fmt.Errorf("field \"jsonrpc\": must be \"2.0\", got %s", orMissing(jsonrpc))
	}
	if m.ID != nil && string(m.ID) != "null" && !validID(m.ID) {
		return m, fmt.Errorf("field \"id\": must be a string or an integer, got %s", m.ID)
	}
	if method != nil {
		var s string
		if err := json.Unmarshal(method, &s); err != nil {
			return m, fmt.Errorf("field \"method\": must be a string, got %s", method)
		}
		m.Method = s
		if m.Result != nil || m.Error != nil {
			return m, errors.New("a message with \"method\" must not carry \"result\" or \"error\"")
		}
		if m.Params != nil && !isObjectOrArray(m.Params) {
			return m, fmt.Errorf("field \"params\": must be an object or array, got %s", m.Params)
		}
		if m.ID == nil {
			m.Kind = KindNotification
			return m, nil
		}
		if string(m.ID) == "null" {
			return m, errors.New("field \"id\": a request id must not be null")
		}
		m.Kind = KindRequest
		return m, nil
	}
	if (m.Result == nil) == (m.Error == nil) {
		return m, errors.New("a response must carry exactly one of \"result\" or \"error\"")
	}
	if m.ID == nil && m.Result != nil {
		return m, errors.New("field \"id\": missing in a response")
	}
	if m.Error != nil && !isObject(m.Error) {
		return m, fmt.Errorf("field \"error\": must be an object, got %s", m.Error)
	}
	m.Kind = KindResponse
	return m, nil
}

func orMissing(b []byte) string {
	if b == nil {
		return "nothing (missing)"
	}
	return string(b)
}

func isObject(b []byte) bool { return len(b) > 0 && b[0] == '{' }

func isObjectOrArray(b []byte) bool { return len(b) > 0 && (b[0] == '{' || b[0] == '[') }

// validID accepts a JSON string or a JSON number token (integers; a
// fractional or exponent number is accepted too so that it can be reported
// and matched by its exact token).
func validID(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// IDKey returns the key under which a pending request with this id token is
// found: the exact token bytes. Since a string token starts with '"' and a
// number does not, 1 and "1" never collide; 0 is a valid id.
func IDKey(id json.RawMessage) string { return string(id) }

// SameID reports whether two id tokens are identical in bytes and type.
func SameID(a, b json.RawMessage) bool { return a != nil && b != nil && bytes.Equal(a, b) }

// IDType names the JSON type of an id token for messages ("number", "string").
func IDType(id json.RawMessage) string {
	if len(id) == 0 {
		return "missing"
	}
	switch id[0] {
	case '"':
		return "string"
	case 'n':
		return "null"
	}
	return "number"
}
