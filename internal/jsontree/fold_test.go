package jsontree

import (
	"strings"
	"testing"
)

func TestCheckNames(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"exact duplicate, top level", `{"id":1,"id":2}`, `f:1:9: $.id: member name "id" appears twice in one object`},
		{"case variant, top level", `{"name":"a","Name":"b"}`, `f:1:13: $.Name: member name "Name" differs from "name" only in letter case`},
		{"nested object in an array", "{\"a\":{\"b\":[1,\n{\"id\":1,\"ID\":2}]}}", `f:2:9: $.a.b[1].ID: member name "ID"`},
		{"exact duplicate, deep", `{"a":[{"x":{"y":1,"y":2}}]}`, `$.a[0].x.y: member name "y" appears twice`},
		{"Kelvin sign", "{\"k\":1,\"\u212a\":2}", `only in letter case`},
		{"long s", "{\"s\":1,\"\u017f\":2}", `only in letter case`},
		{"array of objects", `[{"x":1},{"x":2,"X":3}]`, `$[1].X:`},
		{"escaped name", `{"a":1,"\u0041":2}`, `$.A: member name "A" differs from "a"`},
		{"after nested values", `{"a":{"b":[1,{"c":2}]},"d":[],"A":0}`, `$.A:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNames([]byte(tt.in), "f")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	for _, ok := range []string{`{"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]}`, `{"ab":1,"ba":2}`, `[]`, `"Name"`, `{"a":{"A":1}}`, `not json`, `{"a":`} {
		if err := CheckNames([]byte(ok), "f"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// foldDup reports whether some object of v has two names equal under
// strings.EqualFold (the definition CheckNames implements).
func foldDup(v *Value) bool {
	switch v.Kind {
	case Array:
		for _, e := range v.Arr {
			if foldDup(e) {
				return true
			}
		}
	case Object:
		for i, m := range v.Obj {
			for _, o := range v.Obj[:i] {
				if strings.EqualFold(m.Key, o.Key) {
					return true
				}
			}
			if foldDup(m.Val) {
				return true
			}
		}
	}
	return false
}

// CheckNames agrees with Parse and strings.EqualFold: a document Parse
// refuses for a duplicate key is refused, and a document it accepts is
// refused exactly when two names of one object fold equal.
func FuzzCheckNames(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `[{"k":1},{"\u212a":1}]`, `{"x":[1,2,{"y":{}}],"z":null}`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return
		}
		err := CheckNames(data, "f")
		v, perr := Parse(data, "f")
		if perr != nil {
			if strings.Contains(perr.Error(), "duplicate key") && err == nil {
				t.Errorf("Parse found a duplicate, CheckNames did not: %v", perr)
			}
			return
		}
		if (err != nil) != foldDup(v) {
			t.Errorf("CheckNames %v, fold duplicate %v", err, foldDup(v))
		}
	})
}

// foldKey agrees with strings.EqualFold.
func FuzzFoldKey(f *testing.F) {
	for _, s := range [][2]string{{"name", "Name"}, {"k", "\u212a"}, {"s", "\u017f"}, {"ß", "SS"}, {"a", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if (foldKey(a) == foldKey(b)) != strings.EqualFold(a, b) {
			t.Errorf("foldKey(%q)=%q, foldKey(%q)=%q, EqualFold %v", a, foldKey(a), b, foldKey(b), strings.EqualFold(a, b))
		}
	})
}
