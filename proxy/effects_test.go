package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseEffects(t *testing.T) {
	m, err := ParseEffects([]byte(`{"format":"witness-effects","v":1,"effects":[
  {"tool":"write_file","op":"write","target":"$.path"},
  {"tool":"move_file","op":"write","target":"$[\"dest dir\"].files[1]"},
  {"tool":"pay","op":"payment"}
]}`), "fx.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rules) != 3 {
		t.Fatalf("rules %v", m.Rules)
	}
	got, ok := m.Rules["write_file"].TargetOf(json.RawMessage(`{"path":"/tmp/a","content":"x"}`))
	if !ok || got != "/tmp/a" {
		t.Errorf("target %q %v", got, ok)
	}
	got, ok = m.Rules["move_file"].TargetOf(json.RawMessage(`{"dest dir":{"files":["a",{"n":1}]}}`))
	if !ok || got != `{"n":1}` {
		t.Errorf("target %q %v", got, ok)
	}
	if _, ok := m.Rules["write_file"].TargetOf(json.RawMessage(`{"content":"x"}`)); ok {
		t.Error("missing path found")
	}
	if _, ok := m.Rules["pay"].TargetOf(json.RawMessage(`{}`)); ok {
		t.Error("rule without target found one")
	}
}

func TestParseEffectsErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[]`, "fx.json:1:1: an effects mapping is a JSON object"},
		{`{"format":"witness-effects","v":1,"effects":[` + "\n" + `{"tool":"a","op":"zap"}]}`, `fx.json:2:18: $.effects[0].op: got "zap", want one of read, write`},
		{`{"format":"witness-effects","v":1,"effects":[{"tool":"a","op":"read"},` + "\n\n" + `{"tool":"a","op":"read"}]}`, `fx.json:3:9: $.effects[1].tool: tool "a" has a rule already`},
		{`{"format":"witness-effects","v":1,"effects":[{"tool":"a","op":"read","target":"path"}]}`, `fx.json:1:79: $.effects[0].target: path "path" must start with $`},
		{`{"format":"witness-effects","v":1,"effects":[{"tool":"a","op":"read","target":"$[-1]"}]}`, `[-1] is not an index (a non-negative integer)`},
		{`{"format":"witness-effects","v":1,"effects":[{"tool":"a","op":"read","extra":1}]}`, `fx.json:1:70: $.effects[0].extra: unknown field`},
		{`{"format":"witness-effects","v":2,"effects":[]}`, `fx.json:1:33: $.v: unsupported version 2`},
		{`{"v":1,"effects":[]}`, `fx.json:1:1: $.format: missing`},
		{`{"format":"witness-effects","v":1,"effects":[]} x`, `fx.json:1:49: unexpected data after the JSON value`},
		{`{"format":"witness-effects","v":1,"effects":[],"v":1}`, `fx.json:1:48: $.v: duplicate key "v"`},
		{`{"format":"witness-effects","v":1,"effects":[{"op":"read"}]}`, `fx.json:1:46: $.effects[0].tool: missing`},
		{`{"format":"witness-effects",`, `fx.json:1:29: not valid JSON`},
	} {
		_, err := ParseEffects([]byte(c.in), "fx.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseEffects(%s): error %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzParseEffects(f *testing.F) {
	f.Add([]byte(`{"format":"witness-effects","v":1,"effects":[{"tool":"write_file","op":"write","target":"$.path"}]}`))
	f.Add([]byte(`{"format":"witness-effects","v":1,"effects":[{"tool":"m","op":"delete","target":"$[\"a]\"][0].b"}]}`))
	f.Add([]byte(`{"effects":[{"tool":"x"}]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseEffects(data, "fuzz.json")
		if err != nil {
			var ee *EffectsError
			if !asEffectsError(err, &ee) || ee.File != "fuzz.json" || ee.Line < 1 {
				t.Fatalf("error %v does not name file and line", err)
			}
			return
		}
		for _, r := range m.Rules {
			r.TargetOf(json.RawMessage(`{"path":"p","a]":[{"b":1}]}`))
			if !validOp(r.Op) {
				t.Fatalf("invalid op %q accepted", r.Op)
			}
		}
	})
}

func asEffectsError(err error, target **EffectsError) bool {
	e, ok := err.(*EffectsError)
	if ok {
		*target = e
	}
	return ok
}
