package graph

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/agent-trace-witness/witness/capture"
)

// sameDecode checks that DecodeEventFast agrees with capture.DecodeEvent
// (Wire aside, which the fast path skips).
func sameDecode(t *testing.T, line []byte) {
	want, werr := capture.DecodeEvent(line)
	got, gerr := DecodeEventFast(line)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("line %q: capture err %v, fast err %v", line, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("line %q: errors differ: %v / %v", line, werr, gerr)
		}
		return
	}
	if got.Wire == nil {
		want.Wire = nil
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("line %q:\ncapture %+v\nfast    %+v", line, want, got)
	}
}

func TestDecodeEventFastAgrees(t *testing.T) {
	logs := [][]byte{sampleLog(t), synthetic(t, 3000, 9), hansardLog(t)}
	for _, l := range logs {
		for _, line := range bytes.Split(bytes.TrimSuffix(l, []byte("\n")), []byte("\n")) {
			sameDecode(t, line)
		}
	}
	odd := []string{
		`{"v":1}`, `{"v":1,"v":1}`, ` {"v":1,"seq":0,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":0,"id":"e\u0030","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":[1,2.5e3,true,null,"\u00e9"]},"wire":{"offsets":[1]}}`,
		`{"v":1,"seq":01,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":1,}}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"bogus","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"v":1,"seq":1,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","is_error":null,"effect":{"op":"read","bogus":1}}`,
		"{\"v\":1,\"seq\":1,\"id\":\"e\xff\",\"session\":\"s\",\"kind\":\"tool_call\",\"ts\":\"x\",\"source\":\"observed\",\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
		`[]`, ``, `{`, `{"v":1} x`,
		`{"id":"e1","kind":"ambiguous","payload":{"bytes":3,"direction":"c2s","reasons":["batch"],"sha256":"x","text":"[1]"},"payload_sha256":"x","prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1,"wire":{"offsets":[0]}}`,
		`{"id":"e1","kind":"tool_call","numbers":{"$.a":"1.0","$.b":"-0"},"payload":{"a":1,"b":0},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
		`{"id":"e1","kind":"tool_call","numbers":{"$.a":1},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
		`{"id":"e1","kind":"tool_call","numbers":[],"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`,
	}
	for _, l := range odd {
		sameDecode(t, []byte(l))
	}
}

func FuzzDecodeEventFast(f *testing.F) {
	for _, line := range bytes.Split(sampleLog(f), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"v":1,"seq":0,"id":"e0","session":"s","kind":"tool_call","ts":"x","source":"observed","prev":"0000000000000000000000000000000000000000000000000000000000000000","payload":{"a":[1,2.5e3]}}`))
	f.Add([]byte(`{"id":"e1","kind":"ambiguous","numbers":{"$.a":"1.0"},"payload":{"text":"[1]"},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameDecode(t, line)
	})
}
