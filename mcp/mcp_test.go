package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agent-trace-witness/witness/internal/canon"
)

func readAll(t *testing.T, lr *LineReader) []Line {
	t.Helper()
	var out []Line
	for {
		l, err := lr.Next()
		if err == io.EOF {
			return out
		}
		var tl *LineTooLongError
		if err != nil && !errors.As(err, &tl) {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

func TestLineReaderExactBytes(t *testing.T) {
	in := "{\"a\":1}\r\n\n\xff\xfe bad\n{\"id\":1.0}\npartial"
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		lines := readAll(t, NewLineReader(r, 0))
		var got bytes.Buffer
		for _, l := range lines {
			if int64(got.Len()) != l.Off {
				t.Fatalf("offset %d, want %d", l.Off, got.Len())
			}
			got.Write(l.Bytes)
			if !l.Partial {
				got.WriteByte('\n')
			}
		}
		if got.String() != in {
			t.Fatalf("round trip: %q", got.String())
		}
		if len(lines) != 5 || !lines[4].Partial || lines[0].Partial || string(lines[0].Bytes) != "{\"a\":1}\r" {
			t.Fatalf("lines: %+v", lines)
		}
	}
}

func TestLineReaderTooLong(t *testing.T) {
	in := strings.Repeat("x", 25) + "\nok\n"
	lr := NewLineReader(strings.NewReader(in), 10)
	l, err := lr.Next()
	var tl *LineTooLongError
	if !errors.As(err, &tl) || !l.More || len(l.Bytes) != 10 {
		t.Fatalf("first piece: %+v %v", l, err)
	}
	if !strings.Contains(err.Error(), "maximum line size of 10 bytes") {
		t.Fatalf("error does not name the size: %v", err)
	}
	l, err = lr.Next()
	if err != nil || !l.More || len(l.Bytes) != 10 {
		t.Fatalf("second piece: %+v %v", l, err)
	}
	l, err = lr.Next()
	if err != nil || l.More || string(l.Bytes) != "xxxxx" {
		t.Fatalf("last piece: %+v %v", l, err)
	}
	l, err = lr.Next()
	if err != nil || string(l.Bytes) != "ok" || l.Off != 26 {
		t.Fatalf("next line: %+v %v", l, err)
	}
	if (&LineTooLongError{Max: 16 << 20}).Error() != "line at byte offset 0 exceeds the maximum line size of 16 MiB (16777216 bytes)" {
		t.Fatal((&LineTooLongError{Max: 16 << 20}).Error())
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		kind Kind
		id   string
	}{
		{`{"jsonrpc":"2.0","id":0,"method":"ping"}`, KindRequest, "0"},
		{`{"jsonrpc":"2.0","id":"1","method":"roots/list","params":{}}`, KindRequest, `"1"`},
		{`{"result":{},"jsonrpc":"2.0","id":1.0}`, KindInvalid, ""},
		{`{"result":{},"jsonrpc":"2.0","id":7}`, KindResponse, "7"},
		{`{"method":"notifications/tools/list_changed","jsonrpc":"2.0"}`, KindNotification, ""},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"x"}}`, KindResponse, "3"},
		{`{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}`, KindResponse, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, KindInvalid, "1"},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, KindInvalid, "1"},
		{`Starting server...`, KindInvalid, ""},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, KindInvalid, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, KindInvalid, "null"},
		{`{"jsonrpc":"2.0","id":{},"result":{}}`, KindInvalid, "{}"},
		{`{"jsonrpc":"2.0","id":1,"result":{}} trailing`, KindInvalid, ""},
		{`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, KindInvalid, ""},
	}
	for _, c := range cases {
		m, err := Parse([]byte(c.line))
		if m.Kind != c.kind || string(m.ID) != c.id {
			t.Errorf("%s: kind %s id %s err %v", c.line, m.Kind, m.ID, err)
		}
		if (err != nil) != (c.kind == KindInvalid) {
			t.Errorf("%s: err %v", c.line, err)
		}
		if string(m.Raw) != c.line {
			t.Errorf("raw changed")
		}
	}
	m, _ := Parse([]byte(`{ "jsonrpc" : "2.0", "id" : 7 , "result" : { "x" : 1.0 } }`))
	if string(m.Result) != `{ "x" : 1.0 }` || string(m.ID) != "7" {
		t.Fatalf("result not exact: %s", m.Result)
	}
}

func TestIDMatching(t *testing.T) {
	if SameID([]byte(`1`), []byte(`"1"`)) || !SameID([]byte(`0`), []byte(`0`)) || IDKey([]byte(`1`)) == IDKey([]byte(`"1"`)) {
		t.Fatal("id matching must respect type")
	}
	if IDType([]byte(`"1"`)) != "string" || IDType([]byte(`1`)) != "number" {
		t.Fatal("id type")
	}
}

func TestEncode(t *testing.T) {
	if got := string(Request(0, "initialize", []byte(`{"a":1}`))); got != `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"a":1}}` {
		t.Fatal(got)
	}
	if got := string(ErrorResponse([]byte(`"x"`), CodeMethodNotFound, "method not found: sampling/createMessage")); got != `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"method not found: sampling/createMessage"}}` {
		t.Fatal(got)
	}
	for _, b := range [][]byte{Request(1, "x", nil), Notification("n", nil), Result([]byte("1"), []byte("{}"))} {
		if m, err := Parse(b); err != nil || m.Kind == KindInvalid {
			t.Fatalf("%s: %v", b, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"result":{},"jsonrpc":"2.0","id":"1"}`, `[1]`, `{"jsonrpc":"2.0","method":"n","params":[1]}`, "\xff", `{"jsonrpc":"2.0","error":{}}`} {
		f.Add([]byte(s))
	}
	for _, s := range attackLines {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Parse(line)
		if m == nil || !bytes.Equal(m.Raw, line) {
			t.Fatal("raw not kept")
		}
		if err == nil && m.Kind == KindInvalid {
			t.Fatal("kind invalid without an error")
		}
		if m.ID != nil && !bytes.Contains(line, m.ID) {
			t.Fatal("id token not a slice of the line")
		}
		if m.Kind != KindInvalid && err != nil && !IsAmbiguous(err) {
			t.Fatalf("kind %s with a non-ambiguity error %v", m.Kind, err)
		}
		if err != nil {
			return
		}
		// one reading: the canonical encoder carries it (unique names,
		// valid strings, exact numbers) and every decoder family agrees
		if _, cerr := canon.Transform(line); cerr != nil {
			t.Fatalf("unambiguous line the canonical encoder refuses: %v", cerr)
		}
		if r := ReadAll(line); len(r.List) != 1 {
			t.Fatalf("unambiguous line with %d readings: %+v", len(r.List), r.List)
		}
	})
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), 3)
	f.Add([]byte("xxxxxxxxxxxxxxxx\n"), 4)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<12 {
			max = 1 + (max&0xff+0xff)%64
		}
		lr := NewLineReader(iotest.HalfReader(bytes.NewReader(in)), max)
		var got []byte
		for {
			l, err := lr.Next()
			if err == io.EOF {
				break
			}
			var tl *LineTooLongError
			if err != nil && !errors.As(err, &tl) {
				t.Fatal(err)
			}
			if len(l.Bytes) > max || l.Off != int64(len(got)) {
				t.Fatalf("piece of %d bytes at %d", len(l.Bytes), l.Off)
			}
			got = append(got, l.Bytes...)
			if !l.Partial && !l.More {
				got = append(got, '\n')
			}
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("round trip %q != %q", got, in)
		}
	})
}

// parseReference is the first, json.Decoder-based Parse, kept as the
// reference the fast Parse is fuzzed against.
// It returns a Message with Kind KindInvalid and a
// non-nil error when the line is not a valid JSON-RPC 2.0 message; Raw is
// always set. Parse never panics.
func parseReference(line []byte) (*Message, error) {
	m := &Message{Raw: line, Kind: KindInvalid}
	if IsBatch(line) {
		return m, errors.New("a JSON-RPC batch (array) is not a single message")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return m, fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return m, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	var jsonrpc, method json.RawMessage
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return m, fmt.Errorf("not JSON: %w", err)
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return m, fmt.Errorf("field %q: not JSON: %w", key, err)
		}
		switch key {
		case "jsonrpc", "id", "method", "params", "result", "error":
			if seen[key] {
				return m, fmt.Errorf("field %q appears twice", key)
			}
			seen[key] = true
		}
		switch key {
		case "jsonrpc":
			jsonrpc = raw
		case "id":
			m.ID = raw
		case "method":
			method = raw
		case "params":
			m.Params = raw
		case "result":
			m.Result = raw
		case "error":
			m.Error = raw
		}
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return m, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, errors.New("trailing data after the JSON object")
	}
	return classify(m, jsonrpc, method)
}

// FuzzParseMatchesReference checks the fast Parse against the decoder-based
// reference: same kind, same error or not, same exact slices.
func FuzzParseMatchesReference(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"result":{"a":"}\\\"]"},"jsonrpc":"2.0","id":"1"}`,
		`{"jsonrpc":"2.0","\u0069d":7,"result":[]}`, `{ "jsonrpc" : "2.0" , "ID" : 1 , "result" : { } }`, `{"jsonrpc":"2.0","method":"n","params":[1,{"x":[]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, errA := Parse(line)
		if IsAmbiguous(errA) {
			return // the reference takes what encoding/json takes
		}
		b, errB := parseReference(line)
		if (errA == nil) != (errB == nil) || a.Kind != b.Kind {
			t.Fatalf("fast %s %v, reference %s %v", a.Kind, errA, b.Kind, errB)
		}
		if errA != nil {
			return
		}
		for _, p := range [][2]json.RawMessage{{a.ID, b.ID}, {a.Params, b.Params}, {a.Result, b.Result}, {a.Error, b.Error}} {
			if !bytes.Equal(p[0], p[1]) || (p[0] == nil) != (p[1] == nil) {
				t.Fatalf("slices differ: %q vs %q", p[0], p[1])
			}
		}
		if a.Method != b.Method {
			t.Fatalf("method %q vs %q", a.Method, b.Method)
		}
	})
}
