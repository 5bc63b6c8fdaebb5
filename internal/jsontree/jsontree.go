package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
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
	Col  int // 1-based byte column where the value starts
	// Off and End delimit the value's text in the document (data[Off:End]),
	// for a reader that must keep a value's bytes as written
	Off, End int64
	Str      string
	Num      json.Number
	Bool     bool
	Arr      []*Value
	Obj      []Member
}

// Member is one object member.
type Member struct {
	Key     string
	KeyLine int
	KeyCol  int
	Val     *Value
}

// Get returns the member value for key, or nil (the first one, in a tree
// ParseWire built with a repeated name).
func (v *Value) Get(key string) *Value {
	for _, m := range v.Obj {
		if m.Key == key {
			return m.Val
		}
	}
	return nil
}

// Lookup returns the member value for key and whether there is one.
func (v *Value) Lookup(key string) (*Value, bool) {
	m := v.Get(key)
	return m, m != nil
}

// Error is the one positioned error of every witness reader (JSON files,
// JSON-lines logs, cassettes, mappings, policies, audit snapshots). It
// prints as
//
//	file:line:col: path: message
//
// leaving out what the reader does not know (a column, a path). Path is a
// JSON path of the one dialect (package jsonpath); one written relative to
// the root ("tools[1].scopes") is shown rooted ("$.tools[1].scopes").
type Error struct {
	File  string
	Line  int64  // 1-based; 0 when unknown
	Col   int    // 1-based byte column; 0 when unknown
	Field string // JSON path of the value at fault; "" for the whole line or document
	Msg   string // what is wrong; when empty, Err's text
	Err   error  // the underlying error, if any (a *jsonlimit.Error, a syntax error)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	line, col, msg := e.Line, e.Col, e.Msg
	if le, ok := e.Err.(*jsonlimit.Error); ok {
		if msg == "" {
			msg = fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth)
		}
		if col == 0 && le.File != "" {
			line, col = int64(le.Line), le.Col
		}
	}
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return Format(e.File, line, col, e.Field, msg)
}

// Locate places e in file at line (for a reader of JSON lines, whose
// decoder knows only the line's own positions); a nesting error is placed
// there too, with its column.
func (e *Error) Locate(file string, line int64) {
	e.File, e.Line = file, line
	if le, ok := e.Err.(*jsonlimit.Error); ok {
		e.Err = le.In(file, line)
	}
}

// Format renders a position and a message in the one format of witness's
// reader errors, "file:line:col: path: message", leaving out the parts
// that are empty or zero (a column is shown only with a line).
func Format(file string, line int64, col int, path, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(line, 10))
		if col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if path != "" {
		b.WriteString(jsonpath.Rooted(path))
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

// Parse parses data (named name in errors) into a tree, strictly:
// duplicate member names, invalid UTF-8, lone surrogate escapes and
// trailing data are refused. Nesting deeper than jsonlimit.MaxDepth is
// refused before anything else, in one pass. Every error is an *Error
// naming line and column.
func Parse(data []byte, name string) (*Value, error) {
	return parse(data, name, true)
}

// ParseWire parses one JSON value as a peer sent it, for a reader that must
// keep what it was given (redaction re-encodes a wire line with only the
// secrets changed): members stay in their order, a repeated member name is
// kept twice, and invalid UTF-8 and lone surrogates read as U+FFFD, as
// encoding/json reads them. The nesting limit and trailing-data rule are
// those of Parse.
func ParseWire(data []byte, name string) (*Value, error) {
	return parse(data, name, false)
}

func parse(data []byte, name string, strict bool) (*Value, error) {
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		le := err.(*jsonlimit.Error)
		return nil, &Error{File: name, Line: int64(le.Line), Col: le.Col, Msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth), Err: le}
	}
	p := &parser{data: data, name: name, dec: json.NewDecoder(bytes.NewReader(data)), lineLine: 1, strict: strict}
	if strict && !utf8.Valid(data) {
		return nil, p.fail(int64(invalidUTF8Offset(data)), "not valid UTF-8")
	}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n", p.data[off]) >= 0 {
		off++
	}
	if off < int64(len(p.data)) {
		if _, err := p.dec.Token(); err != io.EOF {
			return nil, p.fail(off, "unexpected data after the JSON value")
		}
	}
	return v, nil
}

type parser struct {
	data   []byte
	name   string
	dec    *json.Decoder
	strict bool
	// path is the member names (string) and indexes (int) down to the
	// value being read, rendered only for an error
	path []any
	// lineOff, lineLine, lineStart: the line at offset lineOff and the
	// offset where that line starts, so that pos counts forward from the
	// last position (linear over a document)
	lineOff   int64
	lineLine  int
	lineStart int64
}

// pos returns the 1-based line and byte column of offset off, counting
// from the last offset asked when off is past it.
func (p *parser) pos(off int64) (int, int) {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	if off < p.lineOff {
		return lineCol(p.data, off)
	}
	seg := p.data[p.lineOff:off]
	if n := bytes.Count(seg, []byte{'\n'}); n > 0 {
		p.lineLine += n
		p.lineStart = p.lineOff + int64(bytes.LastIndexByte(seg, '\n')) + 1
	}
	p.lineOff = off
	return p.lineLine, int(off-p.lineStart) + 1
}

// field renders the path of the value being read.
func (p *parser) field() string {
	path := "$"
	for _, s := range p.path {
		switch t := s.(type) {
		case string:
			path = jsonpath.Member(path, t)
		case int:
			path = jsonpath.Index(path, t)
		}
	}
	if path == "$" {
		return ""
	}
	return path
}

// fail returns an *Error at offset off about the value being read.
func (p *parser) fail(off int64, msg string) error {
	line, col := lineCol(p.data, off)
	return &Error{File: p.name, Line: int64(line), Col: col, Field: p.field(), Msg: msg}
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

// errAt reports a decoder error met at offset off. A syntax error is
// placed at the byte that breaks the grammar, as the whole-document
// decoder finds it.
func (p *parser) errAt(off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset - 1
		var v any
		if uerr := json.Unmarshal(p.data, &v); errors.As(uerr, &se) {
			off, err = se.Offset-1, se
		}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || msg == "unexpected end of JSON input" {
		msg = "unexpected end of JSON input"
		off = int64(len(p.data))
	}
	if off < 0 {
		off = 0
	}
	e := p.fail(off, "not valid JSON: "+msg).(*Error)
	e.Err = err
	return e
}

func (p *parser) value(depth int) (*Value, error) {
	off := p.start()
	if depth > jsonlimit.MaxDepth {
		// unreachable after the check in Parse; keeps the recursion bounded
		return nil, p.fail(off, fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth))
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.errAt(off, err)
	}
	return p.fromToken(tok, off, depth)
}

func (p *parser) fromToken(tok json.Token, off int64, depth int) (*Value, error) {
	v := &Value{Off: off}
	v.Line, v.Col = p.pos(off)
	defer func() { v.End = p.dec.InputOffset() }()
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v.Kind = Object
			var seen map[string]bool
			if p.strict {
				seen = map[string]bool{}
			}
			for p.dec.More() {
				koff := p.start()
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.errAt(koff, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, p.fail(koff, "not valid JSON: object key is not a string")
				}
				p.path = append(p.path, k)
				if p.strict {
					if err := checkSurrogates(p.data, koff); err != nil {
						return nil, p.fail(koff, err.Error())
					}
					if seen[k] {
						return nil, p.fail(koff, fmt.Sprintf("duplicate key %q", k))
					}
					seen[k] = true
				}
				kl, kc := p.pos(koff)
				val, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				p.path = p.path[:len(p.path)-1]
				v.Obj = append(v.Obj, Member{Key: k, KeyLine: kl, KeyCol: kc, Val: val})
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.errAt(p.start(), err)
			}
		case '[':
			v.Kind = Array
			for i := 0; p.dec.More(); i++ {
				p.path = append(p.path, i)
				el, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				p.path = p.path[:len(p.path)-1]
				v.Arr = append(v.Arr, el)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.errAt(p.start(), err)
			}
		default:
			return nil, p.fail(off, fmt.Sprintf("not valid JSON: unexpected %q", t))
		}
	case string:
		if p.strict {
			if err := checkSurrogates(p.data, off); err != nil {
				return nil, p.fail(off, err.Error())
			}
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
				u := canon.Hex4(s[i+2 : i+6])
				if u >= 0xD800 && u <= 0xDBFF {
					if i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						if l := canon.Hex4(s[i+8 : i+12]); l >= 0xDC00 && l <= 0xDFFF {
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

// lineCol returns the 1-based line and byte column of offset off.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	pre := data[:off]
	return bytes.Count(pre, []byte{'\n'}) + 1, int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
}
