package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// AmbiguousError is the error Parse returns for a line that is JSON but has
// more than one reading: a server (or host) could act on something other
// than what the witness reads. Reasons say why, each naming a JSON path
// ("duplicate member \"id\" at $").
type AmbiguousError struct {
	Reasons []string
}

func (e *AmbiguousError) Error() string {
	return "ambiguous line: " + strings.Join(e.Reasons, "; ")
}

// IsAmbiguous reports whether err says a line is ambiguous.
func IsAmbiguous(err error) bool {
	var a *AmbiguousError
	return errors.As(err, &a)
}

// NumberText is a number whose canonical JSON form (internal/canon) is not
// its wire text although it denotes the same value (1.0, -0, 1E2, 0.50):
// Path is its JSON path in the line ($.params.arguments.x), Text the exact
// wire literal.
type NumberText struct {
	Path string
	Text string
}

// maxReasons bounds the reasons listed for one line; the rest are counted.
const maxReasons = 32

// scanResult is what the strict scan of a line found.
type scanResult struct {
	reasons  []string
	more     int          // reasons not listed
	numbers  []NumberText // exact-valued numbers whose canonical text differs
	err      error        // the line is not JSON at all (a syntax error)
	eof      bool         // the syntax error is the end of the line inside a value
	values   int          // top-level values on the line
	batch    bool         // the first value is an array
	envelope bool         // a reason concerns the envelope (top-level names, jsonrpc, id, method)
}

func (r *scanResult) add(envelope bool, format string, args ...any) {
	if envelope {
		r.envelope = true
	}
	if len(r.reasons) >= maxReasons {
		r.more++
		return
	}
	r.reasons = append(r.reasons, fmt.Sprintf(format, args...))
}

func (r *scanResult) list() []string {
	if r.more == 0 {
		return r.reasons
	}
	return append(r.reasons, fmt.Sprintf("%d more reasons not listed", r.more))
}

// frame is one open array or object of the scan.
type frame struct {
	obj   bool
	idx   int    // array: index of the current element
	key   []byte // object: name of the current member
	names nameSet
}

// nameSet holds the member names of one object, exactly and folded. Small
// objects use slices, larger ones maps, so the scan stays linear.
type nameSet struct {
	start int // the object's names are strictScan.names[start:] while small
	em    map[string]struct{}
	fm    map[string]string // fold key -> first exact name
}

const nameSetSmall = 16

// addName records a member name of the innermost object and returns whether
// it repeats an earlier name exactly (dup) or the earlier name equal to it
// under simple case folding (variant). Small objects keep their names on
// one stack shared by all open objects (an object's members are all read
// before its parent's next member) and compare pairwise with
// bytes.EqualFold; larger ones use maps, so the scan stays linear.
func (s *strictScan) addName(ns *nameSet, name []byte) (dup bool, variant string) {
	if ns.em == nil && len(s.names)-ns.start < nameSetSmall {
		for _, n := range s.names[ns.start:] {
			if bytes.Equal(n, name) {
				return true, ""
			}
			if variant == "" && bytes.EqualFold(n, name) {
				variant = string(n)
			}
		}
		s.names = append(s.names, name)
		return false, variant
	}
	if ns.em == nil {
		ns.em = make(map[string]struct{}, 2*nameSetSmall)
		ns.fm = make(map[string]string, 2*nameSetSmall)
		for _, n := range s.names[ns.start:] {
			ns.em[string(n)] = struct{}{}
			if fk := foldKey(string(n)); ns.fm[fk] == "" {
				ns.fm[fk] = string(n)
			}
		}
		s.names = s.names[:ns.start]
	}
	if _, ok := ns.em[string(name)]; ok {
		return true, ""
	}
	ns.em[string(name)] = struct{}{}
	fk := foldKey(string(name))
	if first, ok := ns.fm[fk]; ok {
		return false, first
	}
	ns.fm[fk] = string(name)
	return false, ""
}

// foldKey maps name to a key that two names share exactly when
// strings.EqualFold says they are equal: every rune becomes the smallest
// rune of its simple case folding orbit.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			if c >= 'a' && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b)
	}
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// envelopeNames are the top-level member names the witness reads.
var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// strictScan reads line once, in linear time and without recursion, and
// reports everything that gives it more than one reading. A syntax error is
// reported in err (the line is not JSON); ambiguity in reasons.
type strictScan struct {
	b     []byte
	i     int
	stack []frame
	deep  []bool // containers nested beyond MaxWireDepth: only whether each is an object
	r     scanResult
	name  bool // reading a member name
	keep  bool // return string values too (the lenient reader)
	names [][]byte
}

func (s *strictScan) depth() int { return len(s.stack) + len(s.deep) }

func scanLine(line []byte) scanResult {
	s := &strictScan{b: line, stack: make([]frame, 0, 8)}
	s.run()
	return s.r
}

// path renders the JSON path of the value being read.
func (s *strictScan) path() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, f := range s.stack {
		if f.obj {
			writeKeyPath(&b, string(f.key))
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// objectPath is the path of the innermost open object.
func (s *strictScan) objectPath() string {
	saved := s.stack
	s.stack = s.stack[:len(s.stack)-1]
	p := s.path()
	s.stack = saved
	return p
}

func writeKeyPath(b *strings.Builder, k string) {
	simple := k != ""
	for i := 0; i < len(k) && simple; i++ {
		c := k[i]
		simple = c == '_' || c == '-' || c == '/' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	}
	if simple {
		b.WriteByte('.')
		b.WriteString(k)
		return
	}
	b.WriteString("[")
	b.WriteString(strconv.Quote(k))
	b.WriteString("]")
}

// quoteShort quotes s for a reason, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

func (s *strictScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *strictScan) fail(eof bool, format string, args ...any) {
	if s.r.err == nil {
		s.r.err = fmt.Errorf(format+" at byte %d", append(args, s.i)...)
		s.r.eof = eof
	}
}

// inEnvelope reports whether the value being read is a top-level jsonrpc,
// id or method member.
func (s *strictScan) inEnvelope() bool {
	if len(s.stack) == 0 || !s.stack[0].obj || s.r.values > 1 {
		return false
	}
	switch string(s.stack[0].key) {
	case "jsonrpc", "id", "method":
		return true
	}
	return false
}

func (s *strictScan) run() {
	for {
		s.ws()
		if s.i >= len(s.b) {
			if s.r.values == 0 {
				s.fail(true, "empty line")
			}
			break
		}
		s.r.values++
		if s.r.values == 2 {
			s.r.add(true, "several values on one line (a stream decoder reads each as a message)")
		}
		if s.r.values == 1 && s.b[s.i] == '[' {
			s.r.batch = true
			s.r.add(true, "batch: a JSON-RPC batch (array) holds several messages")
		}
		if !s.value() {
			if s.r.values > 1 {
				// a decoder that reads one value acts on the first and
				// ignores (or chokes on) the rest: ambiguous, not invalid
				s.r.add(true, "trailing data that is not JSON after the first value: %v", s.r.err)
				s.r.err, s.r.eof = nil, false
			}
			return
		}
	}
}

// value reads one complete value (iteratively) and returns false on a
// syntax error.
func (s *strictScan) value() bool {
	base := s.depth()
	for {
		s.ws()
		if s.i >= len(s.b) {
			s.fail(true, "unexpected end of line")
			return false
		}
		c := s.b[s.i]
		switch {
		case c == '{' || c == '[':
			s.i++
			if len(s.stack) < jsonlimit.MaxWireDepth {
				s.stack = append(s.stack, frame{obj: c == '{', names: nameSet{start: len(s.names)}})
			} else {
				if len(s.deep) == 0 {
					s.r.add(false, "nesting deeper than %d levels at %s", jsonlimit.MaxWireDepth, s.path())
				}
				s.deep = append(s.deep, c == '{')
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' or ']'
				s.i++
				s.pop()
				break
			}
			if c == '{' && !s.member() {
				return false
			}
			continue
		case c == '"':
			if _, ok := s.str(); !ok {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if !s.number() {
				return false
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		default:
			s.fail(false, "unexpected character %q", c)
			return false
		}
		// a value ended: close containers or go on to the next element
		for {
			if s.depth() == base {
				return true
			}
			s.ws()
			if s.i >= len(s.b) {
				s.fail(true, "unexpected end of line")
				return false
			}
			obj := s.curObj()
			c := s.b[s.i]
			if c == ',' {
				s.i++
				if obj {
					if !s.member() {
						return false
					}
				} else if len(s.deep) == 0 {
					s.stack[len(s.stack)-1].idx++
				}
				break
			}
			if (obj && c == '}') || (!obj && c == ']') {
				s.i++
				s.pop()
				continue
			}
			s.fail(false, "expected ',' or a closing bracket, got %q", c)
			return false
		}
	}
}

func (s *strictScan) curObj() bool {
	if len(s.deep) > 0 {
		return s.deep[len(s.deep)-1]
	}
	return s.stack[len(s.stack)-1].obj
}

func (s *strictScan) pop() {
	if len(s.deep) > 0 {
		s.deep = s.deep[:len(s.deep)-1]
		return
	}
	f := &s.stack[len(s.stack)-1]
	if f.obj && f.names.em == nil {
		s.names = s.names[:f.names.start]
	}
	s.stack = s.stack[:len(s.stack)-1]
}

// member reads a member name and its colon; the value follows.
func (s *strictScan) member() bool {
	s.ws()
	if s.i >= len(s.b) {
		s.fail(true, "unexpected end of line")
		return false
	}
	if s.b[s.i] != '"' {
		s.fail(false, "expected a member name")
		return false
	}
	s.name = true
	name, ok := s.str()
	s.name = false
	if !ok {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		s.fail(true, "unexpected end of line")
		return false
	}
	if s.b[s.i] != ':' {
		s.fail(false, "expected ':' after a member name")
		return false
	}
	s.i++
	if len(s.deep) > 0 {
		return true // beyond the depth limit (already a reason): no name checks
	}
	f := &s.stack[len(s.stack)-1]
	top := len(s.stack) == 1 && s.r.values == 1
	dup, variant := s.addName(&f.names, name)
	switch {
	case dup:
		s.r.add(top, "duplicate member %s at %s", quoteShort(string(name)), s.objectPath())
	case variant != "":
		s.r.add(top, "case-variant members %s/%s at %s (a case-insensitive decoder may read either)", quoteShort(variant), quoteShort(string(name)), s.objectPath())
	}
	if string(name) == "__proto__" {
		// JSON.parse keeps it as an own member, but a JavaScript server
		// that copies the object by assignment (zod, spread, Object.assign)
		// sets the prototype instead: the member vanishes and its members
		// are inherited by every lookup
		s.r.add(top, "member \"__proto__\" at %s (a JavaScript decoder may read it as the prototype)", s.objectPath())
	}
	if top {
		for _, e := range envelopeNames {
			if string(name) != e && bytes.EqualFold(name, []byte(e)) {
				s.r.add(true, "member %s at $ differs from %q only in letter case (a case-insensitive decoder reads it as %q)", quoteShort(string(name)), e, e)
			}
		}
	}
	f.key = name
	return true
}

func (s *strictScan) literal(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		if len(s.b)-s.i < len(w) && string(s.b[s.i:]) == w[:len(s.b)-s.i] {
			s.fail(true, "unexpected end of line")
		} else {
			s.fail(false, "invalid literal")
		}
		return false
	}
	s.i += len(w)
	return true
}

// number scans a JSON number and checks that the canonical encoder carries
// its value exactly.
func (s *strictScan) number() bool {
	start := s.i
	end, msg := scanNumber(s.b, s.i)
	if msg != "" {
		s.i = end
		s.fail(end >= len(s.b), "%s", msg)
		return false
	}
	s.i = end
	if plainInt(s.b[start:end]) {
		return true // a short integer: canonical as written
	}
	lit := string(s.b[start:end])
	c, exact := canonicalNumber(lit)
	switch {
	case !exact:
		s.r.add(s.inEnvelope(), "number %s at %s cannot be represented exactly", shortLit(lit), s.path())
	case c != lit:
		s.r.numbers = append(s.r.numbers, NumberText{Path: s.path(), Text: lit})
	}
	return true
}

// plainInt reports whether a scanned number is an integer of at most 15
// digits other than -0, which canonical JSON writes as it is.
func plainInt(b []byte) bool {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (len(b) != len(d) && len(d) == 1 && d[0] == '0') {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i and
// returns its end, or a message saying what is wrong.
func scanNumber(b []byte, i int) (int, string) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return i, "invalid number"
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, "invalid number: no digits after '.'"
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, "invalid number: no digits in the exponent"
		}
	}
	return i, ""
}

func shortLit(lit string) string {
	if len(lit) > 40 {
		return lit[:40] + "..."
	}
	return lit
}

// canonicalNumber returns the canonical JSON text of the number literal lit
// and whether it denotes exactly the value lit denotes (canon.ExactNumber,
// the one rule shared with the model API reader).
func canonicalNumber(lit string) (string, bool) { return canon.ExactNumber(lit) }

// str scans a string token and returns its decoded value; invalid UTF-8 and
// lone surrogate escapes are reasons (the canonical encoder refuses them),
// raw control characters and bad escapes syntax errors.
func (s *strictScan) str() ([]byte, bool) {
	s.i++
	b := s.b
	start := s.i
	for s.i < len(b) {
		c := b[s.i]
		if c == '"' {
			raw := b[start:s.i]
			s.i++
			if !utf8.Valid(raw) {
				s.strReason("invalid UTF-8")
			}
			return raw, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	out := append([]byte(nil), b[start:s.i]...)
	badUTF8, lone := !utf8.Valid(out), ""
	for s.i < len(b) {
		c := b[s.i]
		switch {
		case c == '"':
			s.i++
			if badUTF8 {
				s.strReason("invalid UTF-8")
			}
			if lone != "" {
				s.strReason("lone surrogate escape " + lone)
			}
			return out, true
		case c < 0x20:
			s.fail(false, "control character in a string")
			return nil, false
		case c == '\\':
			var e canon.Escape
			out, e = canon.AppendEscape(out, b[s.i:])
			switch e.Status {
			case canon.EscapeEOF:
				s.fail(true, "unexpected end of line in a string")
				return nil, false
			case canon.EscapeBadHex:
				s.i += 2 // the error's offset is past the "\u"
				s.fail(e.Short, `invalid \u escape`)
				return nil, false
			case canon.EscapeInvalid:
				s.i += 2
				s.fail(false, "invalid escape \\%c", e.R)
				return nil, false
			case canon.EscapeLone:
				if lone == "" {
					lone = fmt.Sprintf(`\u%04x`, e.R)
				}
			}
			s.i += e.N
		default:
			if c >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(b[s.i:])
				if r == utf8.RuneError && n == 1 {
					badUTF8 = true
				}
				out = append(out, b[s.i:s.i+n]...)
				s.i += n
				continue
			}
			out = append(out, c)
			s.i++
		}
	}
	s.fail(true, "unexpected end of line in a string")
	return nil, false
}

// strReason reports a string the canonical encoder cannot carry: a member
// name (s.name set) or a value.
func (s *strictScan) strReason(what string) {
	if s.name {
		s.r.add(len(s.stack) <= 1, "%s in a member name at %s", what, s.objectPath())
		return
	}
	s.r.add(s.inEnvelope() || len(s.stack) == 0, "%s in a string at %s", what, s.path())
}
