package jsonpath

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []Step
	}{
		{"$", nil},
		{"$.a.b", []Step{{Name: "a"}, {Name: "b"}}},
		{"$..password", []Step{{Descend: true, Name: "password"}}},
		{"$.items[0]", []Step{{Name: "items"}, {Index: 0, IsIndex: true}}},
		{"$.a[*].b", []Step{{Name: "a"}, {Wildcard: true}, {Name: "b"}}},
		{"$.*", []Step{{Wildcard: true}}},
		{"$['odd key']", []Step{{Name: "odd key"}}},
		{`$["dest dir"].files[1]`, []Step{{Name: "dest dir"}, {Name: "files"}, {Index: 1, IsIndex: true}}},
		{`$["a]\"b"]`, []Step{{Name: `a]"b`}}},
		{"$..[2]", []Step{{Descend: true, Index: 2, IsIndex: true}}},
	}
	for _, tt := range tests {
		p, err := Parse(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(p.Steps, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.in, p.Steps, tt.want)
		}
	}
	for in, want := range map[string]string{
		"a.b":      "must start with $",
		"$.":       "ends after a dot",
		"$x":       "unexpected",
		"$[-1]":    "not an index",
		"$[+1]":    "not an index",
		"$[]":      "not an index",
		"$[1":      "unclosed [",
		"$.a..":    "ends after a dot",
		`$["a"`:    "missing ']'",
		"$['a]":    "closing '",
		"$.a[x]":   "not an index",
		"$.a.[0]x": "unexpected",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, err := ParseSingular("$..a"); err == nil {
		t.Error("descent accepted as singular")
	}
}

func TestLookupAndBuilders(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"a":{"b c":[1,{"d":"x"}]}}`), &v); err != nil {
		t.Fatal(err)
	}
	path := Index(Member(Member("", "a"), "b c"), 1)
	if path != `$.a["b c"][1]` {
		t.Fatalf("built %s", path)
	}
	p, err := Parse(Member(path, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Lookup(v); !ok || got != "x" {
		t.Errorf("lookup %v %v", got, ok)
	}
	for in, want := range map[string]string{"a.b": "$.a.b", "[1].x": "$[1].x", "$.q": "$.q", "": ""} {
		if got := Rooted(in); got != want {
			t.Errorf("Rooted(%q) = %q, want %q", in, got, want)
		}
	}
}

// A path Member and Index build parses back to the steps they were built
// from, whatever the member name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"$.a.b", "$..x", `$["a]"][0]`, "$['k'].*", "$[", "a"} {
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, s, name string) {
		if p, err := Parse(s); err == nil && p.Text != s {
			t.Fatalf("text %q", p.Text)
		}
		if !utf8.ValidString(name) {
			return // a member name read from JSON is always valid UTF-8
		}
		built := Index(Member("", name), 3)
		p, err := Parse(built)
		if err != nil {
			t.Fatalf("%q: %v", built, err)
		}
		want := []Step{{Name: name}, {Index: 3, IsIndex: true}}
		if !reflect.DeepEqual(p.Steps, want) {
			t.Fatalf("%q: %+v", built, p.Steps)
		}
	})
}
