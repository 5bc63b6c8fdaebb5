package jsontree

import (
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"strings"
	"testing"
)

func TestParseErrorsNameLine(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"syntax error on line 3", "{\n\"a\": 1,\n\"b\": }", "f.json:3:6: $.b: not valid JSON"},
		{"duplicate key", "{\"a\": 1,\n \"a\": 2}", `f.json:2:2: $.a: duplicate key "a"`},
		{"trailing data", "{}\n{}", "f.json:2:1: unexpected data after the JSON value"},
		{"invalid UTF-8", "\"ok\"\n\"\xff\"", "f.json:2:2: not valid UTF-8"},
		{"lone surrogate", "[\n\"\\ud800\"]", `f.json:2:1: $[0]: lone UTF-16 surrogate`},
		{"lone surrogate in a key", "{\"\\udc00\": 1}", `lone UTF-16 surrogate`},
		{"truncated", "{\"a\":", "f.json:1:6: $.a: not valid JSON: unexpected end of JSON input"},
		{"empty", "", "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "f.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSurrogatePairsAccepted(t *testing.T) {
	v, err := Parse([]byte(`{"k":"\ud83d\ude00 \u00e9 \\ud800"}`), "f")
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get("k").Str; got != "😀 é \\ud800" {
		t.Errorf("got %q", got)
	}
}

func TestObjectReader(t *testing.T) {
	in := "{\n \"s\": \"x\",\n \"n\": 3,\n \"b\": true,\n \"l\": [\"a\", \"b\"],\n \"o\": [{\"k\": \"v\"}],\n \"z\": null\n}"
	v, err := Parse([]byte(in), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	var perr error
	r := NewObjectReader("f.json", "", v, &perr)
	if r.String("s", true) != "x" || r.Int("n", true) != 3 || !r.Bool("b", true) || len(r.Strings("l", true)) != 2 {
		t.Fatal("values")
	}
	got := ""
	r.Objects("o", true, func(i int, o *ObjectReader) { got = o.String("k", true); o.Done() })
	if got != "v" {
		t.Errorf("nested %q", got)
	}
	if s, ok := r.OptString("z"); ok || s != "" {
		t.Error("null optional string")
	}
	if perr != nil {
		t.Fatal(perr)
	}
	r.Done()
	if perr != nil {
		t.Fatalf("all fields used, Done: %v", perr)
	}

	tests := []struct {
		name string
		read func(r *ObjectReader)
		want string
	}{
		{"unknown field", func(r *ObjectReader) { r.String("s", true) }, "f.json:3:2: $.n: unknown field"},
		{"wrong type", func(r *ObjectReader) { r.String("n", true) }, "f.json:3:7: $.n: want a string, got number"},
		{"missing", func(r *ObjectReader) { r.String("nope", true) }, "f.json:1:1: $.nope: missing"},
		{"array element type", func(r *ObjectReader) { r.Strings("o", true) }, "f.json:6:8: $.o[0]: want a string, got object"},
		{"nested unknown", func(r *ObjectReader) {
			r.Objects("o", true, func(i int, o *ObjectReader) { o.Done() })
		}, "f.json:6:9: $.o[0].k: unknown field"},
		{"not an integer", func(r *ObjectReader) { r.Int("s", true) }, "want a number, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var perr error
			r := NewObjectReader("f.json", "", v, &perr)
			tt.read(r)
			r.Done()
			if perr == nil || perr.Error() != tt.want && !strings.Contains(perr.Error(), tt.want) {
				t.Errorf("err %v, want %q", perr, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",{"b":null}],"c":true}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte("\"\\ud800\""))
	f.Add([]byte("{\n\"k\":\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, "fuzz.json")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		var perr error
		r := NewObjectReader("fuzz.json", "", v, &perr)
		r.String("a", false)
		r.Strings("b", false)
		r.Objects("c", false, func(int, *ObjectReader) {})
		r.Done()
		if v.Line < 1 {
			t.Fatalf("line %d", v.Line)
		}
	})
}

func TestTrailingSeparatorRefused(t *testing.T) {
	for _, in := range []string{"{},", "{}:", "1 ,"} {
		if _, err := Parse([]byte(in), "f"); err == nil || !strings.Contains(err.Error(), "unexpected data after") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestParseWireKeepsRepeatedNames(t *testing.T) {
	v, err := ParseWire([]byte(`{"a":1,"b":{"c":"\ud800"},"a":"x"}`), "line")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := jsonpath.Parse("$..a")
	if got := len(v.Select(p)); got != 2 {
		t.Errorf("selected %d, want both copies", got)
	}
	out, err := v.AppendCompact(nil)
	if err != nil || string(out) != "{\"a\":1,\"b\":{\"c\":\"\ufffd\"},\"a\":\"x\"}" {
		t.Errorf("%s %v", out, err)
	}
	if _, err := Parse([]byte(`{"a":1,"a":2}`), "f"); err == nil {
		t.Error("Parse accepted a repeated name")
	}
}
