package core

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// FuzzCollectiveStep: any valid message, collective or not, in any order,
// is read by the Runner without a panic, and a result gives at most one
// check per answer plus its question.
func FuzzCollectiveStep(f *testing.F) {
	f.Add([]byte(`{"direction":"incoming","conversation":"g","sender":"agent:fac","text":"q","operation":"request","operationId":"o","deadline":"2026-08-30T14:33:10Z"}`),
		[]byte(`{"direction":"incoming","conversation":"g","sender":"agent:fac","text":"q","operation":"result","operationId":"o","answers":[{"member":"agent:bo","outcome":"answered","text":"a","postId":"p"},{"member":"agent:me","outcome":"missing"}]}`))
	f.Add([]byte(`{"direction":"outgoing","conversation":"g","sender":"agent:me","text":"x","operation":"gather","operationId":"o","deadline":"2026-08-30T14:33:00Z"}`),
		[]byte(`{"direction":"outgoing","conversation":"g","sender":"agent:me","text":"y","operation":"answer","operationId":"o"}`))
	f.Add([]byte(`{"direction":"incoming","conversation":"g","sender":"s","text":"","operation":"close","operationId":"o"}`),
		[]byte(`{"direction":"incoming","conversation":"g","sender":"s","text":"f","operation":"operation_failed","operationId":"o","failure":"deadline-passed"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		eng, err := NewEngine(mustPolicy(t, collPolicy), nil, "agent:me", "2026-08-30T14:33:00Z")
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(eng)
		for i, raw := range [][]byte{a, b, a} {
			var m eventlog.Message
			if json.Unmarshal(raw, &m) != nil {
				return
			}
			if _, err := m.Validate(); err != nil {
				return
			}
			cs, err := r.Step(Candidate{Event: "e" + string(rune('1'+i)), Message: m, ts: "2026-08-30T14:33:05Z"})
			if err != nil {
				continue // a message canonical JSON cannot carry
			}
			if m.Operation == OpResult && m.Direction == Incoming && len(cs) > len(m.Answers)+1 {
				t.Fatalf("%d checks for %d answers", len(cs), len(m.Answers))
			}
		}
		if _, err := r.Restart("2026-08-30T14:34:00Z"); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzReadRecordedChecks: the comparison's reader of audit check records
// never panics, and refuses only with an evidence code.
func FuzzReadRecordedChecks(f *testing.F) {
	var audit bytes.Buffer
	evalAll(f, mustPolicy(f, collPolicy), nil, &audit, in("dm:bo", "agent:bo", "hi"), out("dm:bo", "ok", "agent:bo"))
	f.Add(audit.Bytes())
	f.Add([]byte(`{"format":"org.social-harness/firewall-audit/v4","snapshotId":"s","type":"start"}` + "\n" +
		`{"type":"check","checkId":"chk_0000000000000000000000000000000000000000000000000000000000000000","input":{"historyMarks":{"e1":1},"history":[1]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := ReadRecordedChecks(bytes.NewReader(data), "fuzz.ndjson")
		if err != nil {
			switch exitcode.Of(err) {
			case exitcode.Incomplete, exitcode.Tampered, exitcode.Failure:
			default:
				t.Fatalf("code %v: %v", exitcode.Of(err), err)
			}
		}
	})
}

// FuzzDecodeMappingCollective: the collective mapping properties decode
// strictly (usage errors only).
func FuzzDecodeMappingCollective(f *testing.F) {
	f.Add([]byte(`{"format":"witness-message-mapping/v1","localAgent":"a","deliver":[{"tool":"t","items":"$.m","conversation":"$.c","sender":"$.s","text":"$.t","operation":"$.op","operationId":"$.id","deadline":"$.d","failure":"$.f","answers":"$.answers"}]}`))
	f.Add([]byte(`{"format":"witness-message-mapping/v1","localAgent":"a","send":[{"tool":"t","conversation":"c","text":"$.t","answers":"literal"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMapping(data, "fuzz.json")
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("code %v", exitcode.Of(err))
			}
			return
		}
		for _, d := range m.Deliver {
			if d.Collective.Answers.set && d.Collective.Answers.Path == nil {
				t.Fatal("answers accepted as a literal")
			}
		}
	})
}
