package mcp

import (
	"bytes"
	"encoding/json"
)

// idSpan returns the byte range [start, end) of the top-level "id" member's
// value in the JSON object line, so that the id token can be replaced while
// every other byte stays as it was (witness serve echoes the incoming id into
// a recorded response). ok is false when the line is not a JSON object or has
// no top-level "id".
func idSpan(line []byte) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return 0, 0, false
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		key, _ := kt.(string)
		afterKey := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if key != "id" {
			continue
		}
		end := int(dec.InputOffset())
		// the value starts after the colon and any blanks
		i := afterKey
		for i < end && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n' || line[i] == ':') {
			i++
		}
		if end-i != len(raw) {
			return 0, 0, false
		}
		return i, end, true
	}
	return 0, 0, false
}

// ReplaceID returns a copy of line with the top-level id token replaced by
// id, every other byte unchanged. ok is false when line has no top-level id.
func ReplaceID(line []byte, id json.RawMessage) ([]byte, bool) {
	s, e, ok := idSpan(line)
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, len(line)-(e-s)+len(id))
	out = append(out, line[:s]...)
	out = append(out, id...)
	return append(out, line[e:]...), true
}
