package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// Numbers lists the numbers of the line whose canonical JSON text
	// differs from their wire text though the value is the same (1.0, -0),
	// with their paths, so that an event can keep the exact text.
	Numbers []NumberText
}

// IsBatch reports whether the line holds a JSON array (a 2025-03-26 batch).
func IsBatch(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// Parse classifies one line with the witness's one strict reading of the
// wire. It returns nil only for a line that is exactly one well-formed
// JSON-RPC 2.0 message with a single reading: one JSON object (trailing
// whitespace only), valid UTF-8, unique member names at every depth, no two
// names in one object equal under simple case folding (strings.EqualFold),
// nesting within jsonlimit.MaxWireDepth, no lone surrogate escapes, only
// numbers the canonical encoder carries exactly, an integer or string id,
// and no envelope (or tools/call params) member whose name differs from
// the one the witness reads only in letter case.
//
// A line that is JSON but breaks one of these rules is ambiguous: the error
// is an *AmbiguousError listing every reason with its JSON path. If the
// envelope itself is still pinned down (one object, unique exact and folded
// top-level names, exact jsonrpc, id and method), Kind, ID, Method, Params,
// Result and Error are set all the same; otherwise Kind is KindInvalid. Any
// other error means the line is not a JSON-RPC message (Kind KindInvalid).
//
// Parse runs in time linear in len(line), never panics, matches member
// names exactly (case sensitive) and never takes "the first" or "the last"
// of duplicated names: every field is a slice of line, Raw always set.
func Parse(line []byte) (*Message, error) {
	m := &Message{Raw: line, Kind: KindInvalid}
	sr := scanLine(line)
	if sr.err != nil {
		return m, fmt.Errorf("not JSON: %w", sr.err)
	}
	m.Numbers = sr.numbers
	i := skipWS(line, 0)
	if line[i] != '{' {
		if len(sr.reasons) > 0 {
			return m, &AmbiguousError{Reasons: sr.list()}
		}
		return m, errors.New("not a JSON object")
	}
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
	_, cerr := classify(m, jsonrpc, method)
	if len(m.ID) > 0 && (m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9')) && !exactIntegerID(string(m.ID)) {
		sr.add(true, "id %s is not an exact integer token (readers that convert ids to integers or doubles differ on it)", shortLit(string(m.ID)))
	}
	if m.Method == MethodToolsCall && isObject(m.Params) {
		present := map[string]bool{}
		forMembers(m.Params, func(name string, _ json.RawMessage) { present[name] = true })
		forMembers(m.Params, func(name string, _ json.RawMessage) {
			for _, f := range []string{"name", "arguments", "_meta"} {
				if name != f && !present[f] && strings.EqualFold(name, f) {
					sr.add(false, "member %s at $.params differs from %q only in letter case (a case-insensitive decoder reads it as %q)", quoteShort(name), f, f)
				}
			}
		})
	}
	if len(sr.reasons) > 0 {
		if cerr != nil {
			sr.add(true, "not a valid JSON-RPC message: %v", cerr)
		}
		if sr.envelope || cerr != nil {
			// the envelope has no single reading: report none of it
			*m = Message{Raw: line, Kind: KindInvalid, Numbers: m.Numbers}
		}
		return m, &AmbiguousError{Reasons: sr.list()}
	}
	if cerr != nil {
		return m, cerr
	}
	return m, nil
}

// exactIntegerID reports whether a number id token is an integer in the
// form canonical JSON writes it: no fraction, exponent or -0, and exactly
// representable as an IEEE double.
func exactIntegerID(tok string) bool {
	if strings.ContainsAny(tok, ".eE") || tok == "-0" {
		return false
	}
	c, exact := canonicalNumber(tok)
	return exact && c == tok
}

// forMembers calls fn for each member of a JSON object that Parse's scan
// already found well formed, in order, with the member's decoded name.
func forMembers(obj []byte, fn func(name string, val json.RawMessage)) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		kend := skipValue(obj, i)
		key, err := unquoteKey(obj[i:kend])
		if err != nil {
			return
		}
		i = skipWS(obj, kend)
		i = skipWS(obj, i+1)
		vend := skipValue(obj, i)
		fn(key, json.RawMessage(obj[i:vend:vend]))
		i = skipWS(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
	}
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

// Member returns the value of the member name of the JSON object obj,
// matched exactly (case sensitive). It is meant for parts of a line Parse
// accepted, whose member names are unique: there is no first or last to
// choose. ok is false when obj is not an object or has no such member.
func Member(obj json.RawMessage, name string) (val json.RawMessage, ok bool) {
	forMembers(obj, func(k string, v json.RawMessage) {
		if !ok && k == name {
			val, ok = v, true
		}
	})
	return val, ok
}

// StringValue decodes a JSON string token; ok is false for any other value.
func StringValue(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s, err := unquoteKey(raw)
	return s, err == nil
}

// NumbersUnder returns the numbers of ns at or below the JSON path prefix,
// their paths rebased so that prefix becomes "$" ("$.params.arguments.x"
// under "$.params.arguments" is "$.x"); nil when there are none.
func NumbersUnder(ns []NumberText, prefix string) map[string]string {
	var out map[string]string
	for _, n := range ns {
		rest, ok := strings.CutPrefix(n.Path, prefix)
		if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out["$"+rest] = n.Text
	}
	return out
}

// ForElements calls fn for each element of a JSON array that is part of a
// line Parse accepted; nothing when arr is not an array.
func ForElements(arr json.RawMessage, fn func(el json.RawMessage)) {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i = skipWS(arr, i+1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		if end == i {
			return
		}
		fn(json.RawMessage(arr[i:end:end]))
		i = skipWS(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipWS(arr, i+1)
		}
	}
}
