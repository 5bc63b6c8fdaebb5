package serve

import (
	"bytes"
	"encoding/json"

	"github.com/agent-trace-witness/witness/mcp"
)

// Progress notifications name the request they report on by its
// progressToken (params._meta.progressToken of the request, params.progressToken
// of the notification). Serve uses the token twice: at load, to put a
// recorded notification in the turn of the request it belongs to, whatever
// else the server wrote in between; at replay, to send it with the token
// the host sent this time, which a host matches against its own requests.

// requestTokenOf returns the exact token of params._meta.progressToken of a
// request's params.
func requestTokenOf(params json.RawMessage) (string, bool) {
	meta, ok := mcp.Member(params, "_meta")
	if !ok {
		return "", false
	}
	return tokenOf(meta)
}

// progressTokenOf returns the exact token of params.progressToken of a
// progress notification's params.
func progressTokenOf(params json.RawMessage) (string, bool) {
	return tokenOf(params)
}

// tokenOf returns the progressToken member of obj: a string or a number
// (the protocol's two kinds), as its exact wire token.
func tokenOf(obj json.RawMessage) (string, bool) {
	v, ok := mcp.Member(obj, "progressToken")
	if !ok {
		return "", false
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 || !(v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return "", false
	}
	return string(v), true
}

// withToken returns a copy of a recorded progress notification line with
// its params.progressToken replaced by tok, every other byte unchanged; ok
// is false when the line has no such member.
func withToken(line []byte, tok json.RawMessage) ([]byte, bool) {
	ps, pe, ok := memberSpan(line, 0, "params")
	if !ok {
		return nil, false
	}
	ts, te, ok := memberSpan(line[:pe], ps, "progressToken")
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, len(line)-(te-ts)+len(tok))
	out = append(out, line[:ts]...)
	out = append(out, tok...)
	return append(out, line[te:]...), true
}

// memberSpan returns the byte range [start, end) in b of the value of the
// member name of the JSON object that starts at b[from:] (after blanks);
// ok is false when there is no object there or no such member.
func memberSpan(b []byte, from int, name string) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b[from:]))
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
		afterKey := from + int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if key != name {
			continue
		}
		end := from + int(dec.InputOffset())
		i := afterKey
		for i < end && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n' || b[i] == ':') {
			i++
		}
		if end-i != len(raw) {
			return 0, 0, false
		}
		return i, end, true
	}
	return 0, 0, false
}
