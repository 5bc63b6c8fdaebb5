package firewall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// node is one JSON value with the byte offset where it starts, so that
// decoding errors can name a line and column.
type node struct {
	kind   byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	off    int64
	str    string
	num    json.Number
	b      bool
	keys   []string
	fields map[string]*node
	keyOff map[string]int64
	items  []*node
}

func (n *node) typeName() string {
	switch n.kind {
	case 'o':
		return "object"
	case 'a':
		return "array"
	case 's':
		return "string"
	case 'n':
		return "number"
	case 'b':
		return "boolean"
	}
	return "null"
}

// parseTree parses data as exactly one JSON value. Duplicate object keys
// are refused. Callers refuse nesting deeper than jsonlimit.MaxDepth first
// (checkConfigDepth), so the recursion stays shallow.
func parseTree(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec, data, 0)
	if err != nil {
		// the whole-document decoder locates syntax errors exactly
		var v any
		var se *json.SyntaxError
		if uerr := json.Unmarshal(data, &v); errors.As(uerr, &se) {
			off := se.Offset - 1
			if off < 0 {
				off = 0
			}
			return nil, &posError{off: off, msg: "invalid JSON: " + se.Error()}
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &posError{off: dec.InputOffset(), msg: "trailing data after the JSON value"}
	}
	return n, nil
}

type posError struct {
	off  int64
	path string
	msg  string
}

func (e *posError) Error() string { return e.msg }

func parseNode(dec *json.Decoder, data []byte, depth int) (*node, error) {
	// callers check jsonlimit first; this keeps the recursion bounded
	if depth > jsonlimit.MaxDepth {
		return nil, &posError{off: dec.InputOffset(), msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxErr(dec, err)
	}
	off := valueStart(data, dec.InputOffset(), tok)
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: 'o', off: off, fields: map[string]*node{}, keyOff: map[string]int64{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, syntaxErr(dec, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, &posError{off: dec.InputOffset(), msg: "object key is not a string"}
				}
				koff := dec.InputOffset() - int64(len(strconv.Quote(k)))
				if _, dup := n.fields[k]; dup {
					return nil, &posError{off: koff, path: k, msg: fmt.Sprintf("duplicate property %q", k)}
				}
				v, err := parseNode(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.fields[k] = v
				n.keyOff[k] = koff
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxErr(dec, err)
			}
			return n, nil
		case '[':
			n := &node{kind: 'a', off: off}
			for dec.More() {
				v, err := parseNode(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxErr(dec, err)
			}
			return n, nil
		}
		return nil, &posError{off: off, msg: fmt.Sprintf("unexpected %q", rune(t))}
	case string:
		return &node{kind: 's', off: off, str: t}, nil
	case json.Number:
		return &node{kind: 'n', off: off, num: t}, nil
	case bool:
		return &node{kind: 'b', off: off, b: t}, nil
	case nil:
		return &node{kind: 'z', off: off}, nil
	}
	return nil, &posError{off: off, msg: "unexpected token"}
}

// valueStart estimates the offset at which tok started from the decoder's
// offset after it (exact for delimiters, literals and numbers; strings are
// located by scanning back for the opening quote).
func valueStart(data []byte, after int64, tok json.Token) int64 {
	switch t := tok.(type) {
	case json.Delim:
		return after - 1
	case json.Number:
		return after - int64(len(t))
	case bool:
		if t {
			return after - 4
		}
		return after - 5
	case nil:
		return after - 4
	case string:
		// the string ends at after-1 with a quote; scan back for the
		// unescaped opening quote.
		i := after - 2
		for i >= 0 {
			if data[i] == '"' {
				bs := 0
				for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
					bs++
				}
				if bs%2 == 0 {
					return i
				}
			}
			i--
		}
	}
	return after
}

func syntaxErr(dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &posError{off: se.Offset, msg: "invalid JSON: " + se.Error()}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &posError{off: dec.InputOffset(), msg: "invalid JSON: unexpected end of input"}
	}
	return &posError{off: dec.InputOffset(), msg: "invalid JSON: " + err.Error()}
}

// lineCol converts a byte offset in data to a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	pre := data[:off]
	line := bytes.Count(pre, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
	return line, col
}

// jsonPath renders a path of keys and indexes as $.a.b[0].
func jsonPath(parts ...any) string {
	var b strings.Builder
	b.WriteString("$")
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			b.WriteString(".")
			b.WriteString(v)
		}
	}
	return b.String()
}
