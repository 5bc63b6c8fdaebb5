package eventlog_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-trace-witness/witness/eventlog"
)

// wholeFixtures are logs with wire members (captured sessions, HTTP
// cassettes' x) and the other decoders' fixtures.
func wholeFixtures(t testing.TB) [][]byte {
	t.Helper()
	logs := [][]byte{richLog(t), eventlog.SampleLog(t, eventlog.GoodSigner), synthetic(t, 500, 7)}
	for _, p := range []string{
		"../report/testdata/capture/events.jsonl",
		"../graph/testdata/captured/server-everything.jsonl",
		"../graph/testdata/controls/server-everything-ansi.jsonl",
		"../testdata/demo/agent/openai-agents/model/events.jsonl",
		"../testdata/demo/agent/anthropic-toolrunner/everything/events.jsonl",
	} {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		if !bytes.Contains(b, []byte(`"wire":{`)) {
			t.Fatalf("fixture %s has no wire member", p)
		}
		logs = append(logs, b)
	}
	return logs
}

const wholeEnv = `"id":"e1","kind":"tool_call","prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1`

// hostileWire are lines whose wire member (or envelope) is odd: case
// variants and repeats of keys, nulls, numbers that do not fit, escapes,
// spaces, bad UTF-8, cut lines.
var hostileWire = []string{
	`{` + wholeEnv + `,"wire":{"cassette":"c.jsonl","offsets":[1,2,3],"x":4}}`,
	`{` + wholeEnv + `,"wire":{}}`,
	`{` + wholeEnv + `,"wire":{"offsets":[]}}`,
	`{` + wholeEnv + `,"wire":{"offsets":null}}`,
	`{` + wholeEnv + `,"wire":null}`,
	`{` + wholeEnv + `,"wire":[]}`,
	`{` + wholeEnv + `,"wire":"x"}`,
	`{` + wholeEnv + `,"wire":{"Cassette":"A","cassette":"b"}}`,
	`{` + wholeEnv + `,"wire":{"cassette":"a","cassette":"b"}}`,
	`{` + wholeEnv + `,"wire":{"offsets":[1],"offsets":[2,3]}}`,
	`{` + wholeEnv + `,"wire":{"OFFSETS":[1]}}`,
	`{` + wholeEnv + `,"wire":{"X":1,"x":2}}`,
	`{` + wholeEnv + `,"wire":{"x":1.0}}`,
	`{` + wholeEnv + `,"wire":{"x":1e2}}`,
	`{` + wholeEnv + `,"wire":{"x":-0}}`,
	`{` + wholeEnv + `,"wire":{"x":9223372036854775807}}`,
	`{` + wholeEnv + `,"wire":{"x":9223372036854775808}}`,
	`{` + wholeEnv + `,"wire":{"x":-9223372036854775808}}`,
	`{` + wholeEnv + `,"wire":{"x":123456789012345678}}`,
	`{` + wholeEnv + `,"wire":{"x":01}}`,
	`{` + wholeEnv + `,"wire":{"x":"1"}}`,
	`{` + wholeEnv + `,"wire":{"offsets":[1,]}}`,
	`{` + wholeEnv + `,"wire":{"offsets":[1 ,2]}}`,
	`{` + wholeEnv + `,"wire":{"offsets":["1"]}}`,
	`{` + wholeEnv + `,"wire":{"offsets":[1.5]}}`,
	`{` + wholeEnv + `,"wire":{"cassette":"a\u0062\n"}}`,
	`{` + wholeEnv + `,"wire":{"cassette":null}}`,
	`{` + wholeEnv + `,"wire":{"cassette":1}}`,
	`{` + wholeEnv + `,"wire":{ "cassette" : "a" }}`,
	`{` + wholeEnv + `,"wire": {"cassette":"a"}}`,
	`{` + wholeEnv + `,"wire":{"cassette":"a","extra":1}}`,
	`{` + wholeEnv + `,"wire":{"cassette":"a"},"wire":{"x":1}}`,
	`{` + wholeEnv + `,"Wire":{"x":1}}`,
	`{` + wholeEnv + `,"effect":null}`,
	`{` + wholeEnv + `,"message":null}`,
	`{` + wholeEnv + `,"end":null}`,
	`{` + wholeEnv + `,"legacy":null}`,
	`{` + wholeEnv + `,"numbers":null}`,
	`{` + wholeEnv + `,"effect":[]}`,
	`{` + wholeEnv + `,"wire":{"cassette":"a"`,
	`{` + wholeEnv + `,"wire":{"cassette":"a}}`,
	`{` + wholeEnv + `,"wire":{"\u0063assette":"a"}}`,
	"{" + wholeEnv + ",\"wire\":{\"cassette\":\"a\xff\"}}",
	"{" + wholeEnv + ",\"wire\":{\"cassette\":\"a\x01\"}}",
	`{` + wholeEnv + `,"wire":{"cassette":"a"}} `,
	`{` + wholeEnv + `,"wire":{"cassette":"a"}}x`,
	`{` + wholeEnv + `,"wire":{"offsets":[` + strings.Repeat("[", 300) + `]}}`,
	`{"id":"e0","kind":"session_start","header":{"format":"witness-events","pairing":"jsonrpc-id","witness_version":"x"},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":0,"session":"s","source":"observed","ts":"x","v":1,"wire":{"x":1}}`,
	`{"id":"e1","kind":"session_end","end":{"count":1,"head":"x","reason":"closed"},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"session":"s","source":"observed","ts":"x","v":1,"wire":{"cassette":"c"}}`,
}

// sameWhole checks that DecodeEventFastWhole gives DecodeEvent's event
// (Wire included) or its error text.
func sameWhole(t *testing.T, line []byte) {
	t.Helper()
	want, werr := eventlog.DecodeEvent(line)
	got, gerr := eventlog.DecodeEventFastWhole(line)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("line %q: DecodeEvent err %v, DecodeEventFastWhole err %v", line, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("line %q: errors differ:\n%v\n%v", line, werr, gerr)
		}
		return
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("line %q: events differ (-DecodeEvent +fast):\n%s", line, d)
	}
}

func TestDecodeEventFastWholeAgrees(t *testing.T) {
	n := 0
	for _, l := range wholeFixtures(t) {
		for _, line := range bytes.Split(bytes.TrimSuffix(l, []byte("\n")), []byte("\n")) {
			sameWhole(t, line)
			if e, _ := eventlog.DecodeEventFastWhole(line); e != nil && e.Wire != nil {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no fixture line kept a wire member")
	}
	for _, l := range hostileWire {
		sameWhole(t, []byte(l))
		sameDecode(t, []byte(l)) // DecodeEventFast too (a null effect was once &Effect{})
	}
	// the quick path keeps the wire of a canonical line
	e, perr := eventlog.DecodeEventFastWhole([]byte(hostileWire[0]))
	if perr != nil || e.Wire == nil || e.Wire.Cassette != "c.jsonl" || len(e.Wire.Offsets) != 3 || e.Wire.X != 4 {
		t.Fatalf("wire not kept: %+v %v", e, perr)
	}
}

func FuzzDecodeEventFastWhole(f *testing.F) {
	for _, l := range wholeFixtures(f) {
		for i, line := range bytes.Split(l, []byte("\n")) {
			if i < 40 {
				f.Add(line)
			}
		}
	}
	for _, l := range hostileWire {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sameWhole(t, line)
	})
}

// sameReading reads data with a Reader as it comes and with one set to
// SetFastWhole: the same events, errors, line numbers, raw bytes and
// partial flags, call by call.
func sameReading(t *testing.T, data []byte, maxLine int) {
	t.Helper()
	slow := eventlog.NewReader(bytes.NewReader(data), "log.jsonl")
	fast := eventlog.NewReader(bytes.NewReader(data), "log.jsonl")
	fast.SetFastWhole(true)
	if maxLine > 0 {
		slow.SetMaxLine(maxLine)
		fast.SetMaxLine(maxLine)
	}
	for i := 0; ; i++ {
		we, werr := slow.Next()
		ge, gerr := fast.Next()
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("call %d: errors differ:\n%v\n%v", i, werr, gerr)
		}
		if errors.Is(werr, io.EOF) {
			return
		}
		if d := cmp.Diff(we, ge); d != "" {
			t.Fatalf("call %d: events differ (-Reader +SetFastWhole):\n%s", i, d)
		}
		if slow.Line() != fast.Line() || slow.Partial() != fast.Partial() || !bytes.Equal(slow.Raw(), fast.Raw()) {
			t.Fatalf("call %d: line %d/%d, partial %v/%v", i, slow.Line(), fast.Line(), slow.Partial(), fast.Partial())
		}
		if werr != nil {
			var pe *eventlog.ParseError
			if !errors.As(werr, &pe) {
				return // a read error ends the log
			}
		}
	}
}

func TestReaderFastWholeAgrees(t *testing.T) {
	for _, l := range wholeFixtures(t) {
		sameReading(t, l, 0)
		sameReading(t, l[:len(l)-1], 0)   // no final newline
		sameReading(t, l[:len(l)*2/3], 0) // cut inside a line
		sameReading(t, l, 600)            // over-long lines
	}
	sameReading(t, []byte(strings.Join(hostileWire, "\n")+"\n\n  \n"), 0)
}

func FuzzReaderFastWhole(f *testing.F) {
	for _, l := range wholeFixtures(f) {
		if len(l) > 4000 {
			l = l[:4000]
		}
		f.Add(l, 0)
	}
	f.Add([]byte(strings.Join(hostileWire, "\n")), 300)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		if maxLine < 0 || maxLine > 1<<20 {
			maxLine = 0
		}
		sameReading(t, data, maxLine)
	})
}
