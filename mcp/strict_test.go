package mcp

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// attackLines are the lines of issue 9 that a server reads otherwise than
// a naive witness did; every one must be flagged.
var attackLines = []string{
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"greet","arguments":{}}}`,
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"greet"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_file","Name":"greet","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/data/a"},"Arguments":{"path":"/etc/passwd"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/data/a"},"arguments":{"path":"/etc/passwd"}}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_file","arguments":{}}}]`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"greet","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"n":12345678901234567891}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"n":1e400}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gr\ud800eet","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"greet"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"delete_file"}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"greet"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_file"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":1,"\u212a":2}}}`,
}

func TestParseFlagsAttacks(t *testing.T) {
	for _, l := range attackLines {
		m, err := Parse([]byte(l))
		if err == nil {
			t.Errorf("%s: read as one %s message", l, m.Kind)
		}
	}
}

func TestParseReasons(t *testing.T) {
	cases := []struct{ line, reason string }{
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, `duplicate member "id" at $`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","Name":"y"}}`, `case-variant members "name"/"Name" at $.params`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `batch`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, `several values`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"x":1e400}}}`, `number 1e400 at $.params.arguments.x cannot be represented exactly`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a b":[0,{"c":"\udc00"}]}}}`, `lone surrogate escape \udc00 in a string at $.params.arguments["a b"][1].c`},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"` + "\xff" + `":1}}`, `invalid UTF-8 in a member name at $.params`},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 230) + strings.Repeat("]", 230) + `}`, `nesting deeper than 224 levels`},
		{`{"jsonrpc":"2.0","id":-0,"method":"x"}`, `id -0 is not an exact integer token`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"__proto__":{"path":"/etc/passwd"}}}}`, `member "__proto__" at $.params.arguments (a JavaScript decoder may read it as the prototype)`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.line))
		if !IsAmbiguous(err) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%.60s: got %v, want reason %q", c.line, err, c.reason)
		}
	}
}

func TestParseKeepsExactNumberTexts(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1.0,"b":-0,"c":1E2,"d":7,"e":9007199254740992}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []NumberText{{"$.params.a", "1.0"}, {"$.params.b", "-0"}, {"$.params.c", "1E2"}}
	if len(m.Numbers) != len(want) {
		t.Fatalf("numbers %v", m.Numbers)
	}
	for i := range want {
		if m.Numbers[i] != want[i] {
			t.Fatalf("numbers %v", m.Numbers)
		}
	}
	for lit, exact := range map[string]bool{"12345678901234567891": false, "0.1": true, "0.10000000000000000001": false,
		"1e400": false, "1e-400": false, "-0.0": true, "100e-2": true, "9007199254740993": false, "123456789012345678": false, "123456789012345": true} {
		if _, got := canonicalNumber(lit); got != exact {
			t.Errorf("CanonicalNumber(%s) exact=%v, want %v", lit, got, exact)
		}
	}
}

func TestReadAllCandidates(t *testing.T) {
	r := ReadAll([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_file","Name":"greet","arguments":{"p":"/a"},"arguments":{"p":"/etc"}}}`))
	tools, args := map[string]bool{}, map[string]bool{}
	for _, x := range r.List {
		tools[x.Tool] = true
		args[string(x.Arguments)] = true
	}
	if !tools["delete_file"] || !tools["greet"] || !args[`{"p":"/a"}`] || !args[`{"p":"/etc"}`] {
		t.Fatalf("readings %+v", r.List)
	}
	r = ReadAll([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",`))
	if !r.Incomplete || len(r.List) != 0 {
		t.Fatalf("incomplete: %+v", r)
	}
	r = ReadAll([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",` + "\n" + `"params":{"name":"x"}}`))
	if r.Err != nil || len(r.List) != 1 || r.List[0].Tool != "x" {
		t.Fatalf("joined: %+v", r)
	}
}

// TestParseLinear: a 4 MB line of many members, of deep nesting and of
// long strings is read in bounded time (linear, not quadratic).
func TestParseLinear(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"x","params":{`)
	for i := 0; i < 200000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(`":1`)
	}
	b.WriteString(`}}`)
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat(`{"a":`, 500000) + "1" + strings.Repeat("}", 500000) + "}"
	for _, l := range [][]byte{b.Bytes(), []byte(deep)} {
		start := time.Now()
		_, err := Parse(l)
		if err == nil {
			t.Fatal("want ambiguity")
		}
		ReadAll(l)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%d bytes took %v", len(l), d)
		}
	}
}
