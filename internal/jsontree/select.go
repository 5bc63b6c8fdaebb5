package jsontree

import (
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
)

// Select returns the values path selects under v, each once, in document
// order of the walk (members in their order; a repeated member name in a
// ParseWire tree selects every copy).
func (v *Value) Select(path jsonpath.Path) []*Value {
	cur := []*Value{v}
	for _, st := range path.Steps {
		var next []*Value
		for _, n := range cur {
			if st.Descend {
				n.walk(0, func(d *Value) { next = append(next, d.children(st)...) })
			} else {
				next = append(next, n.children(st)...)
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil
		}
	}
	return cur
}

// Walk calls f on v and every value below it, parents first.
func (v *Value) Walk(f func(*Value)) { v.walk(0, f) }

func (v *Value) walk(depth int, f func(*Value)) {
	if depth > jsonlimit.MaxDepth+1 {
		return // a tree from Parse never gets here; keeps a built tree's walk bounded
	}
	f(v)
	switch v.Kind {
	case Object:
		for _, m := range v.Obj {
			m.Val.walk(depth+1, f)
		}
	case Array:
		for _, e := range v.Arr {
			e.walk(depth+1, f)
		}
	}
}

func (v *Value) children(st jsonpath.Step) []*Value {
	switch {
	case st.Wildcard:
		switch v.Kind {
		case Object:
			out := make([]*Value, len(v.Obj))
			for i, m := range v.Obj {
				out[i] = m.Val
			}
			return out
		case Array:
			return append([]*Value(nil), v.Arr...)
		}
	case st.IsIndex:
		if v.Kind == Array && st.Index < len(v.Arr) {
			return []*Value{v.Arr[st.Index]}
		}
	default:
		if v.Kind == Object {
			var out []*Value
			for _, m := range v.Obj {
				if m.Key == st.Name {
					out = append(out, m.Val)
				}
			}
			return out
		}
	}
	return nil
}

// AppendCompact appends v as compact JSON, members in their order, strings
// escaped as canonical JSON escapes them, numbers as their literal.
func (v *Value) AppendCompact(buf []byte) ([]byte, error) {
	var err error
	switch v.Kind {
	case Object:
		buf = append(buf, '{')
		for i, m := range v.Obj {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = canon.AppendString(buf, m.Key); err != nil {
				return nil, err
			}
			buf = append(buf, ':')
			if buf, err = m.Val.AppendCompact(buf); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case Array:
		buf = append(buf, '[')
		for i, e := range v.Arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = e.AppendCompact(buf); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case String:
		return canon.AppendString(buf, v.Str)
	case Number:
		return append(buf, v.Num...), nil
	case Bool:
		if v.Bool {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	}
	return append(buf, "null"...), nil
}
