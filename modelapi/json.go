package modelapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// ambiguousError is the error of a JSON body (or event) that readers
// disagree on: duplicated or case-variant member names, invalid UTF-8, a
// lone surrogate escape, a number canonical JSON cannot carry exactly.
// Nothing is read from such a body; the reasons name where.
type ambiguousError struct {
	Name    string   // what was read: "request body", "response body", "event 3"
	Reasons []string // each with its position or JSON path
}

func (e *ambiguousError) Error() string {
	return e.Name + " is ambiguous: " + strings.Join(e.Reasons, "; ")
}

// maxReasons bounds the reasons kept for one ambiguous value.
const maxReasons = 32

// readJSON reads one JSON document strictly, named name in errors. It
// returns an *AmbiguousError when readers could disagree on it, and a
// *jsontree.Error (file, line, column, path) when it is not JSON, nests
// deeper than jsonlimit.MaxDepth, or nests deeper than
// jsonlimit.MaxWireDepth (too deep to embed in an event).
func readJSON(data []byte, name string) (*jsontree.Value, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, &ambiguousError{Name: name, Reasons: []string{fmt.Sprintf("invalid UTF-8 at byte %d", off)}}
	}
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		le := err.(*jsonlimit.Error)
		return nil, &jsontree.Error{File: name, Line: int64(le.Line), Col: le.Col, Err: le}
	}
	if err := jsontree.CheckNames(data, name); err != nil {
		return nil, &ambiguousError{Name: name, Reasons: []string{strings.TrimPrefix(err.Error(), name+":")}}
	}
	v, err := jsontree.Parse(data, name)
	if err != nil {
		var je *jsontree.Error
		if errors.As(err, &je) && strings.Contains(je.Msg, "surrogate") {
			return nil, &ambiguousError{Name: name, Reasons: []string{strings.TrimPrefix(err.Error(), name+":")}}
		}
		return nil, err
	}
	var reasons []string
	deep := ""
	walkPath(v, "$", 0, func(x *jsontree.Value, path string, depth int) {
		if depth > jsonlimit.MaxWireDepth && deep == "" {
			deep = path
		}
		if x.Kind == jsontree.Number {
			if _, exact := canon.ExactNumber(string(x.Num)); !exact && len(reasons) < maxReasons {
				lit := string(x.Num)
				if len(lit) > 40 {
					lit = lit[:40] + "..."
				}
				reasons = append(reasons, fmt.Sprintf("%d:%d: %s: number %s cannot be represented exactly", x.Line, x.Col, path, lit))
			}
		}
	})
	if len(reasons) > 0 {
		return nil, &ambiguousError{Name: name, Reasons: reasons}
	}
	if deep != "" {
		return nil, &jsontree.Error{File: name, Field: deep, Msg: fmt.Sprintf("nesting deeper than %d levels (too deep to embed in an event)", jsonlimit.MaxWireDepth)}
	}
	return v, nil
}

// walkPath calls f on v and every value below it with its JSON path and
// depth (containers count one level each). The tree comes from
// jsontree.Parse, so the depth is bounded by jsonlimit.MaxDepth.
func walkPath(v *jsontree.Value, path string, depth int, f func(*jsontree.Value, string, int)) {
	if depth > jsonlimit.MaxDepth+1 {
		return
	}
	d := depth
	if v.Kind == jsontree.Object || v.Kind == jsontree.Array {
		d++
	}
	f(v, path, d)
	switch v.Kind {
	case jsontree.Object:
		for _, m := range v.Obj {
			walkPath(m.Val, jsonpath.Member(path, m.Key), d, f)
		}
	case jsontree.Array:
		for i, e := range v.Arr {
			walkPath(e, jsonpath.Index(path, i), d, f)
		}
	}
}

// raw returns v as canonical JSON. v comes from readJSON, so every number
// is exact and every string valid.
func raw(v *jsontree.Value) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := v.AppendCompact(nil)
	if err == nil {
		b, err = canon.Transform(b)
	}
	if err != nil {
		// unreachable for a tree readJSON returned; keep a valid value
		s, _ := json.Marshal("unencodable: " + err.Error())
		return s
	}
	return b
}

// str returns v's string, or "" when v is absent or not a string.
func str(v *jsontree.Value) string {
	if v != nil && v.Kind == jsontree.String {
		return v.Str
	}
	return ""
}

// member returns member key of object v, or nil.
func member(v *jsontree.Value, key string) *jsontree.Value {
	if v == nil || v.Kind != jsontree.Object {
		return nil
	}
	return v.Get(key)
}

// isNull reports whether v is absent or null.
func isNull(v *jsontree.Value) bool { return v == nil || v.Kind == jsontree.Null }

// BodyRef points at the exact bytes of a body in the cassette: their
// length and sha256.
type BodyRef struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func refOf(b []byte) BodyRef {
	h := sha256.Sum256(b)
	return BodyRef{Bytes: int64(len(b)), SHA256: hex.EncodeToString(h[:])}
}

// shape records the first shape error of a body: the field at fault, its
// position and what was wanted.
type shape struct {
	name string
	body []byte // the document the values were read from
	err  *jsontree.Error
}

// text returns v's JSON text exactly as written in the document.
func (s *shape) text(v *jsontree.Value) string {
	if s.body == nil || v.Off < 0 || v.End > int64(len(s.body)) || v.Off > v.End {
		return string(raw(v))
	}
	return string(s.body[v.Off:v.End])
}

func (s *shape) fail(v *jsontree.Value, path, msg string) {
	if s.err != nil {
		return
	}
	e := &jsontree.Error{File: s.name, Field: path, Msg: msg}
	if v != nil {
		e.Line, e.Col = int64(v.Line), v.Col
	}
	s.err = e
}

// want checks that v (at path) is of kind k; an absent value passes when
// !required.
func (s *shape) want(v *jsontree.Value, path string, k jsontree.Kind, required bool) bool {
	if v == nil {
		if required {
			s.fail(nil, path, "missing")
		}
		return false
	}
	if v.Kind != k {
		s.fail(v, path, fmt.Sprintf("want a %s, got %s", k, v.Kind))
		return false
	}
	return true
}
