package mcp

import (
	"encoding/json"
	"testing"
)

func TestReplaceID(t *testing.T) {
	for _, c := range []struct{ in, id, want string }{
		{`{"result":{"id":5},"jsonrpc":"2.0","id":3}`, `"a"`, `{"result":{"id":5},"jsonrpc":"2.0","id":"a"}`},
		{`{"jsonrpc":"2.0", "id" : 0 ,"result":{}}`, `17`, `{"jsonrpc":"2.0", "id" : 17 ,"result":{}}`},
		{`{"jsonrpc":"2.0","id":"x\"y","error":{"code":1,"message":"m"}}`, `0`, `{"jsonrpc":"2.0","id":0,"error":{"code":1,"message":"m"}}`},
	} {
		got, ok := ReplaceID([]byte(c.in), json.RawMessage(c.id))
		if !ok || string(got) != c.want {
			t.Errorf("ReplaceID(%s, %s) = %s %v, want %s", c.in, c.id, got, ok, c.want)
		}
	}
	if _, ok := ReplaceID([]byte(`{"jsonrpc":"2.0","method":"x"}`), json.RawMessage(`1`)); ok {
		t.Error("replaced a missing id")
	}
	if _, ok := ReplaceID([]byte(`[1]`), json.RawMessage(`1`)); ok {
		t.Error("replaced in an array")
	}
}

func FuzzIDSpan(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte(`{"id" :"a\"b" }`))
	f.Add([]byte(`{"x":[{"id":2}],"id":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s, e, ok := idSpan(line)
		if !ok {
			return
		}
		if s < 0 || e > len(line) || s >= e {
			t.Fatalf("span %d..%d of %d bytes", s, e, len(line))
		}
		if !json.Valid(line[s:e]) {
			t.Fatalf("span %q is not a JSON value", line[s:e])
		}
	})
}
