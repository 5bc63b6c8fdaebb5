package jsontree

import (
	"strings"
	"testing"
)

func TestCheckFoldedNames(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"top level", `{"name":"a","Name":"b"}`, `f:1: field Name: member name "Name" differs from "name" only in letter case`},
		{"nested object", "{\"a\":{\"b\":[1,\n{\"id\":1,\"ID\":2}]}}", `f:2: field a.b[1].ID: member name "ID"`},
		{"Kelvin sign", "{\"k\":1,\"\u212a\":2}", `only in letter case`},
		{"long s", "{\"s\":1,\"\u017f\":2}", `only in letter case`},
		{"array of objects", `[{"x":1},{"x":2,"X":3}]`, `field [1].X:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in), "f")
			if err != nil {
				t.Fatal(err)
			}
			err = CheckFoldedNames(v, "f")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	for _, ok := range []string{`{"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]}`, `{"ab":1,"ba":2}`, `[]`, `"Name"`} {
		v, err := Parse([]byte(ok), "f")
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckFoldedNames(v, "f"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
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
