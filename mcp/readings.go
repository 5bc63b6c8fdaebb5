package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// Reading is one way a peer could read an ambiguous line: what a decoder of
// one family (Decoders) would act on. Every field keeps the exact wire text
// of what it was read from.
type Reading struct {
	// Decoders names the decoder families that read the line this way:
	// "exact-first", "exact-last" (member names matched exactly, the first
	// or last of duplicates wins), "folded-first", "folded-last" (names
	// matched case-insensitively), prefixed "value N: " for the N-th value
	// of a line with several values or a batch (1-based).
	Decoders []string
	Kind     Kind
	Method   string
	ID       json.RawMessage // the exact id token, nil when absent
	// Tool and Arguments are set for a tools/call request: params.name and
	// params.arguments as this decoder resolves them; Arguments is a
	// compact re-encoding that keeps every name, string and number exactly
	// as written (nil when absent).
	Tool      string
	HasTool   bool
	Arguments json.RawMessage
}

// maxReadingValues bounds how many values of one line (batch elements,
// several values) Readings reads; the rest are counted in Dropped.
const maxReadingValues = 64

// Readings is the result of ReadAll.
type Readings struct {
	List    []Reading
	Dropped int // values not read (beyond MaxReadingValues)
	// Incomplete is set when the data ends inside a value: a stream decoder
	// would wait for more (a value split across lines).
	Incomplete bool
	Err        error // the data is not JSON (then List is empty)
}

// ReadAll returns every reading of data that a JSON-RPC peer could act on:
// each top-level value (each element of a batch) read by the four decoder
// families. It is meant for lines Parse called ambiguous or invalid; it
// never panics and bounds nesting by jsonlimit.MaxWireDepth.
func ReadAll(data []byte) Readings {
	var out Readings
	p := &lenient{b: data}
	var values []*lnode
	for {
		p.ws()
		if p.i >= len(p.b) {
			break
		}
		v, err := p.value(0)
		if err != nil {
			out.Err = err
			out.Incomplete = errors.Is(err, errIncomplete)
			if len(values) == 0 {
				return out
			}
			break // the values before the error are still read by a one-value decoder
		}
		if v.kind == 'a' && len(values) == 0 && p.rest() {
			values = append(values, v.vals...)
			continue
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		if out.Err == nil {
			out.Err = errIncomplete
			out.Incomplete = true
		}
		return out
	}
	if len(values) > maxReadingValues {
		out.Dropped = len(values) - maxReadingValues
		values = values[:maxReadingValues]
	}
	for n, v := range values {
		for _, st := range strategies {
			r := read(v, st)
			label := st.name
			if len(values) > 1 {
				label = fmt.Sprintf("value %d: %s", n+1, st.name)
			}
			merged := false
			for i := range out.List {
				if sameReading(&out.List[i], &r) {
					out.List[i].Decoders = append(out.List[i].Decoders, label)
					merged = true
					break
				}
			}
			if !merged {
				r.Decoders = []string{label}
				out.List = append(out.List, r)
			}
		}
	}
	return out
}

func sameReading(a, b *Reading) bool {
	return a.Kind == b.Kind && a.Method == b.Method && bytes.Equal(a.ID, b.ID) && (a.ID == nil) == (b.ID == nil) &&
		a.Tool == b.Tool && a.HasTool == b.HasTool && bytes.Equal(a.Arguments, b.Arguments) && (a.Arguments == nil) == (b.Arguments == nil)
}

type strategy struct {
	name   string
	folded bool
	last   bool
}

var strategies = []strategy{
	{"exact-first", false, false},
	{"exact-last", false, true},
	{"folded-first", true, false},
	{"folded-last", true, true},
}

// read applies one decoder family to one top-level value.
func read(v *lnode, st strategy) Reading {
	r := Reading{Kind: KindInvalid}
	if v.kind != 'o' {
		return r
	}
	method := v.get("method", st)
	id := v.get("id", st)
	params := v.get("params", st)
	if id != nil {
		r.ID = append(json.RawMessage(nil), id.raw...)
	}
	if method != nil {
		if method.kind == 's' {
			r.Method = method.str
		}
		r.Kind = KindNotification
		if id != nil && string(id.raw) != "null" {
			r.Kind = KindRequest
		}
	} else if v.get("result", st) != nil || v.get("error", st) != nil {
		r.Kind = KindResponse
	}
	if (r.Kind == KindRequest || r.Kind == KindNotification) && r.Method == MethodToolsCall && params != nil && params.kind == 'o' {
		if name := params.get("name", st); name != nil && name.kind == 's' {
			r.Tool, r.HasTool = name.str, true
		}
		if args := params.get("arguments", st); args != nil {
			var buf bytes.Buffer
			args.encode(&buf, st)
			r.Arguments = buf.Bytes()
		}
	}
	return r
}

// lnode is a JSON value that keeps duplicated members and exact tokens.
type lnode struct {
	kind byte // 'o', 'a', 's' (string), 'l' (other literal: number, true, false, null)
	raw  []byte
	str  string // decoded string
	keys []string
	rawK [][]byte
	vals []*lnode
}

// get returns the member the strategy picks, or nil.
func (v *lnode) get(name string, st strategy) *lnode {
	var got *lnode
	for i, k := range v.keys {
		if k == name || (st.folded && foldKey(k) == foldKey(name)) {
			got = v.vals[i]
			if !st.last {
				return got
			}
		}
	}
	return got
}

// encode writes v compactly with duplicates resolved by the strategy,
// names and scalars as written.
func (v *lnode) encode(buf *bytes.Buffer, st strategy) {
	switch v.kind {
	case 'o':
		buf.WriteByte('{')
		name := func(k string) string {
			if st.folded {
				return foldKey(k)
			}
			return k
		}
		pick := make(map[string]int, len(v.keys))
		for i, k := range v.keys {
			if _, ok := pick[name(k)]; !ok || st.last {
				pick[name(k)] = i
			}
		}
		first := true
		for _, k := range v.keys {
			j, ok := pick[name(k)]
			if !ok {
				continue // written already
			}
			delete(pick, name(k))
			if !first {
				buf.WriteByte(',')
			}
			first = false
			buf.Write(v.rawK[j])
			buf.WriteByte(':')
			v.vals[j].encode(buf, st)
		}
		buf.WriteByte('}')
	case 'a':
		buf.WriteByte('[')
		for i, c := range v.vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			c.encode(buf, st)
		}
		buf.WriteByte(']')
	default:
		buf.Write(v.raw)
	}
}

var errIncomplete = errors.New("the line ends inside a JSON value")

// lenient parses JSON keeping duplicate members; syntax is checked by
// reusing the strict scanner's token rules.
type lenient struct {
	b []byte
	i int
}

func (p *lenient) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

// rest reports whether only whitespace follows.
func (p *lenient) rest() bool {
	j := p.i
	for j < len(p.b) && (p.b[j] == ' ' || p.b[j] == '\t' || p.b[j] == '\r' || p.b[j] == '\n') {
		j++
	}
	return j == len(p.b)
}

func (p *lenient) syntax(what string) error {
	if p.i >= len(p.b) {
		return errIncomplete
	}
	return fmt.Errorf("%s at byte %d", what, p.i)
}

func (p *lenient) value(depth int) (*lnode, error) {
	if depth > jsonlimit.MaxWireDepth {
		return nil, fmt.Errorf("nesting deeper than %d levels", jsonlimit.MaxWireDepth)
	}
	p.ws()
	if p.i >= len(p.b) {
		return nil, errIncomplete
	}
	start := p.i
	switch c := p.b[p.i]; c {
	case '{':
		p.i++
		v := &lnode{kind: 'o'}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			v.raw = p.b[start:p.i]
			return v, nil
		}
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.syntax("expected a member name")
			}
			ks := p.i
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			rawK := p.b[ks:p.i]
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.syntax("expected ':'")
			}
			p.i++
			c, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.keys = append(v.keys, k)
			v.rawK = append(v.rawK, rawK)
			v.vals = append(v.vals, c)
			p.ws()
			if p.i >= len(p.b) {
				return nil, errIncomplete
			}
			if p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.b[p.i] == '}' {
				p.i++
				v.raw = p.b[start:p.i]
				return v, nil
			}
			return nil, p.syntax("expected ',' or '}'")
		}
	case '[':
		p.i++
		v := &lnode{kind: 'a'}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			v.raw = p.b[start:p.i]
			return v, nil
		}
		for {
			c, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.vals = append(v.vals, c)
			p.ws()
			if p.i >= len(p.b) {
				return nil, errIncomplete
			}
			if p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.b[p.i] == ']' {
				p.i++
				v.raw = p.b[start:p.i]
				return v, nil
			}
			return nil, p.syntax("expected ',' or ']'")
		}
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &lnode{kind: 's', str: s, raw: p.b[start:p.i]}, nil
	}
	c := p.b[p.i]
	switch {
	case c == '-' || (c >= '0' && c <= '9'):
		end, msg := scanNumber(p.b, p.i)
		p.i = end
		if msg != "" {
			return nil, p.syntax(msg)
		}
	default:
		matched := false
		for _, w := range []string{"true", "false", "null"} {
			if w[0] != c {
				continue
			}
			rest := p.b[p.i:]
			if len(rest) < len(w) && string(rest) == w[:len(rest)] {
				return nil, errIncomplete
			}
			if len(rest) < len(w) || string(rest[:len(w)]) != w {
				return nil, p.syntax("invalid literal")
			}
			p.i += len(w)
			matched = true
		}
		if !matched {
			return nil, p.syntax(fmt.Sprintf("unexpected character %q", c))
		}
	}
	return &lnode{kind: 'l', raw: p.b[start:p.i]}, nil
}

// str reads a string token with the strict scanner's rules (lone
// surrogates and invalid UTF-8 are kept, not refused: this is a reading).
func (p *lenient) str() (string, error) {
	s := &strictScan{b: p.b, i: p.i, keep: true}
	v, ok := s.str()
	if !ok {
		if s.r.eof {
			return "", errIncomplete
		}
		return "", s.r.err
	}
	p.i = s.i
	if !utf8.Valid(v) {
		// decoders read each invalid byte as U+FFFD
		var b strings.Builder
		for len(v) > 0 {
			r, n := utf8.DecodeRune(v)
			b.WriteRune(r)
			v = v[n:]
		}
		return b.String(), nil
	}
	return string(v), nil
}
