package eventlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestVerifyLogKeepWireOnUnparsed: with KeepWire, OnEvent gets the events
// a Reader with SetFastWhole gives (Wire included), and OnUnparsed gets
// each other line's bytes, cut-off flag and the Reader's error; without
// it the events have no Wire, as before.
func TestVerifyLogKeepWireOnUnparsed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "demo", "agent", "openai-agents", "fs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	mid := bytes.IndexByte(raw[len(raw)/2:], '\n') + len(raw)/2 + 1
	bad := append(append(append([]byte(nil), raw[:mid]...), "{\"not\":\"an event\"}\n\n"...), raw[mid:]...)
	type got struct {
		line    int64
		ev      *Event
		raw     string
		partial bool
		err     string
	}
	for name, data := range map[string][]byte{"whole": raw, "bad": bad, "cut": bad[:len(bad)*3/4], "cut-event": raw[:len(raw)-1]} {
		var want []got
		r := NewReader(bytes.NewReader(data), "log")
		r.SetFastWhole(true)
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			g := got{line: r.Line(), ev: ev}
			if err != nil {
				g.raw, g.partial, g.err = string(r.Raw()), r.Partial(), err.Error()
			}
			want = append(want, g)
		}
		for _, keep := range []bool{true, false} {
			var have []got
			wires := 0
			_, _ = VerifyLog(bytes.NewReader(data), "log", VerifyLogOptions{KeepWire: keep,
				OnEvent: func(line int64, ev *Event) {
					if ev.Wire != nil {
						wires++
					}
					have = append(have, got{line: line, ev: ev})
				},
				OnUnparsed: func(line int64, b []byte, partial bool, err *ParseError) {
					have = append(have, got{line: line, raw: string(b), partial: partial, err: err.Error()})
				},
			})
			if !keep {
				if wires != 0 {
					t.Errorf("%s: without KeepWire %d events have a wire", name, wires)
				}
				continue
			}
			if wires == 0 {
				t.Errorf("%s: no event has a wire: the comparison shows nothing about it", name)
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("%s: VerifyLog's lines differ from the Reader's", name)
			}
		}
	}
}
