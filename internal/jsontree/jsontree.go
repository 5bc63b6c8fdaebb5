package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// Kind is the JSON type of a Value.
type Kind int

// The JSON types.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// Value is one parsed JSON value with its position.
type Value struct {
	Kind Kind
	Line int // 1-based line where the value starts
	Str  string
	Num  json.Number
	Bool bool
	Arr  []*Value
	Obj  []Member
}

// Member is one object member.
type Member struct {
	Key     string
	KeyLine int
	Val     *Value
}

// Get returns the member value for key, or nil.
func (v *Value) Get(key string) *Value {
	for _, m := range v.Obj {
		if m.Key == key {
			return m.Val
		}
	}
	return nil
}

// Error is a parse or validation error with its position and field path.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Col   int    // 1-based byte column; 0 when unknown
	Field string // JSON path like tools[1].scopes, "" for the document
	Msg   string
	Err   error // the underlying error, if any (a *jsonlimit.Error)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse parses data (named name in errors) into a tree. Nesting deeper
// than jsonlimit.MaxDepth is refused before anything else, in one pass.
func Parse(data []byte, name string) (*Value, error) {
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		le := err.(*jsonlimit.Error)
		return nil, &Error{File: name, Line: le.Line, Col: le.Col, Msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth), Err: le}
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		return nil, &Error{File: name, Line: lineAt(data, int64(off)), Msg: "not valid UTF-8"}
	}
	p := &parser{data: data, name: name, dec: json.NewDecoder(bytes.NewReader(data)), lineLine: 1}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, &Error{File: name, Line: lineAt(data, p.dec.InputOffset()), Msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

type parser struct {
	data []byte
	name string
	dec  *json.Decoder
	// lineOff, lineLine: the line at offset lineOff, so that lineAt counts
	// forward from the last position (linear over a document)
	lineOff  int64
	lineLine int
}

// lineAt returns the 1-based line of byte offset off, counting from the
// last offset asked when off is past it.
func (p *parser) lineAt(off int64) int {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	if off < p.lineOff {
		return lineAt(p.data, off)
	}
	p.lineLine += bytes.Count(p.data[p.lineOff:off], []byte{'\n'})
	p.lineOff = off
	return p.lineLine
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// start returns the offset where the next token begins.
func (p *parser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *parser) errAt(off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of JSON input"
		off = int64(len(p.data))
	}
	return &Error{File: p.name, Line: lineAt(p.data, off), Msg: "not valid JSON: " + msg}
}

func (p *parser) value(depth int) (*Value, error) {
	off := p.start()
	if depth > jsonlimit.MaxDepth {
		// unreachable after the check in Parse; keeps the recursion bounded
		return nil, &Error{File: p.name, Line: p.lineAt(off), Msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth)}
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.errAt(off, err)
	}
	return p.fromToken(tok, off, depth)
}

func (p *parser) fromToken(tok json.Token, off int64, depth int) (*Value, error) {
	v := &Value{Line: p.lineAt(off)}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v.Kind = Object
			seen := map[string]bool{}
			for p.dec.More() {
				koff := p.start()
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.errAt(koff, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, &Error{File: p.name, Line: p.lineAt(koff), Msg: "not valid JSON: object key is not a string"}
				}
				if err := checkSurrogates(p.data, koff); err != nil {
					return nil, &Error{File: p.name, Line: p.lineAt(koff), Msg: err.Error()}
				}
				if seen[k] {
					return nil, &Error{File: p.name, Line: p.lineAt(koff), Msg: fmt.Sprintf("duplicate key %q", k)}
				}
				seen[k] = true
				val, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.Obj = append(v.Obj, Member{Key: k, KeyLine: p.lineAt(koff), Val: val})
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.errAt(p.start(), err)
			}
		case '[':
			v.Kind = Array
			for p.dec.More() {
				el, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.Arr = append(v.Arr, el)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.errAt(p.start(), err)
			}
		default:
			return nil, &Error{File: p.name, Line: v.Line, Msg: fmt.Sprintf("not valid JSON: unexpected %q", t)}
		}
	case string:
		if err := checkSurrogates(p.data, off); err != nil {
			return nil, &Error{File: p.name, Line: v.Line, Msg: err.Error()}
		}
		v.Kind, v.Str = String, t
	case json.Number:
		v.Kind, v.Num = Number, t
	case bool:
		v.Kind, v.Bool = Bool, t
	case nil:
		v.Kind = Null
	}
	return v, nil
}

// checkSurrogates refuses a string literal starting at off that holds a
// \uXXXX escape of a lone UTF-16 surrogate (Go would silently turn it into
// U+FFFD, so two different files would read as the same text).
func checkSurrogates(data []byte, off int64) error {
	if off >= int64(len(data)) || data[off] != '"' {
		return nil
	}
	s := data[off+1:]
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			return nil
		case '\\':
			if i+1 < len(s) && s[i+1] == 'u' && i+5 < len(s) {
				u := hex4(s[i+2 : i+6])
				if u >= 0xD800 && u <= 0xDBFF {
					if i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						if l := hex4(s[i+8 : i+12]); l >= 0xDC00 && l <= 0xDFFF {
							i += 11
							continue
						}
					}
					return errors.New(`lone UTF-16 surrogate \u escape in a string`)
				}
				if u >= 0xDC00 && u <= 0xDFFF {
					return errors.New(`lone UTF-16 surrogate \u escape in a string`)
				}
				i += 5
				continue
			}
			i++
		}
	}
	return nil
}

func hex4(b []byte) int {
	n := 0
	for _, c := range b {
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

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
