package jsontree

import (
	"fmt"
	"sort"

	"github.com/agent-trace-witness/witness/internal/jsonpath"
)

// ObjectReader reads the fields of one JSON object strictly: each accessor
// records the first error (naming file, line and field), and Done refuses
// any member that no accessor asked for.
type ObjectReader struct {
	file string
	path string
	v    *Value
	used map[string]bool
	err  *error
}

// NewObjectReader returns a reader for v, which must be an object; path is
// the field path of v ("" for the document). Errors are collected in *errp
// (the first one wins) so a parser reads straight through and checks once.
func NewObjectReader(file, path string, v *Value, errp *error) *ObjectReader {
	r := &ObjectReader{file: file, path: path, v: v, used: map[string]bool{}, err: errp}
	if v == nil || v.Kind != Object {
		line, col, kind := 0, 0, "nothing"
		if v != nil {
			line, col, kind = v.Line, v.Col, v.Kind.String()
		}
		r.fail(line, col, path, fmt.Sprintf("want a JSON object, got %s", kind))
	}
	return r
}

// Fail records an error about field key of this object.
func (r *ObjectReader) Fail(key, msg string) {
	line, col := 0, 0
	if r.v != nil {
		line, col = r.v.Line, r.v.Col
		for _, m := range r.v.Obj {
			if m.Key == key {
				line, col = m.KeyLine, m.KeyCol
			}
		}
	}
	r.fail(line, col, r.field(key), msg)
}

func (r *ObjectReader) fail(line, col int, field, msg string) {
	if *r.err == nil {
		*r.err = &Error{File: r.file, Line: int64(line), Col: col, Field: field, Msg: msg}
	}
}

func (r *ObjectReader) field(key string) string {
	return jsonpath.Member(r.path, key)
}

// Has reports whether the object has member key (and marks it used).
func (r *ObjectReader) Has(key string) bool {
	return r.Value(key) != nil
}

// Value returns the raw member value (nil when absent) and marks it used.
func (r *ObjectReader) Value(key string) *Value {
	if r.v == nil || r.v.Kind != Object {
		return nil
	}
	r.used[key] = true
	return r.v.Get(key)
}

func (r *ObjectReader) typed(key string, kind Kind, required bool) *Value {
	v := r.Value(key)
	if v == nil {
		if required && r.v != nil && r.v.Kind == Object {
			r.fail(r.v.Line, r.v.Col, r.field(key), "missing")
		}
		return nil
	}
	if v.Kind != kind {
		r.fail(v.Line, v.Col, r.field(key), fmt.Sprintf("want a %s, got %s", kind, v.Kind))
		return nil
	}
	return v
}

// String returns a string member.
func (r *ObjectReader) String(key string, required bool) string {
	if v := r.typed(key, String, required); v != nil {
		return v.Str
	}
	return ""
}

// OptString returns a string member that may also be null; ok is false when
// it is absent or null.
func (r *ObjectReader) OptString(key string) (s string, ok bool) {
	v := r.Value(key)
	if v == nil || v.Kind == Null {
		return "", false
	}
	if v.Kind != String {
		r.fail(v.Line, v.Col, r.field(key), fmt.Sprintf("want a string or null, got %s", v.Kind))
		return "", false
	}
	return v.Str, true
}

// Bool returns a boolean member.
func (r *ObjectReader) Bool(key string, required bool) bool {
	if v := r.typed(key, Bool, required); v != nil {
		return v.Bool
	}
	return false
}

// Int returns an integer member.
func (r *ObjectReader) Int(key string, required bool) int64 {
	v := r.typed(key, Number, required)
	if v == nil {
		return 0
	}
	n, err := v.Num.Int64()
	if err != nil {
		r.fail(v.Line, v.Col, r.field(key), fmt.Sprintf("want an integer, got %s", v.Num))
	}
	return n
}

// Strings returns an array-of-strings member (nil when absent).
func (r *ObjectReader) Strings(key string, required bool) []string {
	v := r.typed(key, Array, required)
	if v == nil {
		return nil
	}
	out := make([]string, 0, len(v.Arr))
	for i, el := range v.Arr {
		if el.Kind != String {
			r.fail(el.Line, el.Col, jsonpath.Index(r.field(key), i), fmt.Sprintf("want a string, got %s", el.Kind))
			return nil
		}
		out = append(out, el.Str)
	}
	return out
}

// Objects calls fn with a reader for each element of an array-of-objects
// member; it returns the number of elements (-1 when absent or not an array).
func (r *ObjectReader) Objects(key string, required bool, fn func(i int, el *ObjectReader)) int {
	v := r.typed(key, Array, required)
	if v == nil {
		return -1
	}
	for i, el := range v.Arr {
		fn(i, NewObjectReader(r.file, jsonpath.Index(r.field(key), i), el, r.err))
	}
	return len(v.Arr)
}

// Object returns a reader for an object member, or nil when it is absent.
func (r *ObjectReader) Object(key string, required bool) *ObjectReader {
	v := r.typed(key, Object, required)
	if v == nil {
		return nil
	}
	return NewObjectReader(r.file, r.field(key), v, r.err)
}

// Done refuses members nobody asked for, naming the first unknown one.
func (r *ObjectReader) Done() {
	if r.v == nil || r.v.Kind != Object {
		return
	}
	var unknown []Member
	for _, m := range r.v.Obj {
		if !r.used[m.Key] {
			unknown = append(unknown, m)
		}
	}
	if len(unknown) == 0 {
		return
	}
	sort.SliceStable(unknown, func(i, j int) bool { return unknown[i].KeyLine < unknown[j].KeyLine })
	m := unknown[0]
	r.fail(m.KeyLine, m.KeyCol, r.field(m.Key), "unknown field")
}
