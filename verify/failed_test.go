package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// failedOut is a model_output of the given status asking for read_file.
func failedOut(status, id string) *eventlog.Event {
	return ev(eventlog.KindModelOutput, "", "", map[string]any{"api": "openai.chat", "status": status,
		"tool_calls": []any{map[string]any{"id": id, "name": "read_file", "arguments": `{"path":"/data/ok.txt"}`}}})
}

// toolResultIn is a model_input sending back the result of call id.
func toolResultIn(id string) *eventlog.Event {
	return ev(eventlog.KindModelInput, "", "", map[string]any{"api": "openai.chat", "status": "ok", "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "go"}}},
		map[string]any{"role": "tool", "content": []any{map[string]any{"type": "tool_result", "call_id": id, "result": []any{}}}},
	}})
}

// A tool call of a failed model answer (error, partial, ambiguous) that a
// later request answers with its result is failed-answer-acted-on,
// incomplete, naming both events, with a seal and without one; a failed
// answer nobody acted on, or a complete one acted on, gives none.
func TestFailedAnswerActedOn(t *testing.T) {
	plan := testPlan()
	for _, status := range []string{"error", "partial", "ambiguous"} {
		evs := append(cleanEvents(), failedOut(status, "call_x"), toolResultIn("call_x"), toolResultIn("call_x"))
		data := buildLog(t, plan, logSpec{events: evs, signer: testKey})
		for _, integrity := range []bool{false, true} {
			opts := signedOpts()
			opts.IntegrityOnly = integrity
			r := runCheck(t, plan, data, opts)
			var got []Finding
			for _, f := range r.Findings {
				if f.Code == "failed-answer-acted-on" {
					got = append(got, f)
				}
			}
			if r.Verdict != Incomplete || len(got) != 1 || got[0].Class != classIncomplete || got[0].EventID != "e9" || got[0].Tool != "read_file" ||
				!strings.Contains(got[0].Message, `call "call_x" (read_file) of the model answer e8, whose status is `+status) {
				t.Errorf("%s (integrity only %v): verdict %s, findings %+v\n%s", status, integrity, r.Verdict, got, reportText(t, r))
			}
		}
	}
	for name, evs := range map[string][]*eventlog.Event{
		"complete answer acted on":   {failedOut("complete", "call_x"), toolResultIn("call_x")},
		"failed answer not acted on": {failedOut("error", "call_x"), toolResultIn("call_y")},
		"result before the answer":   {toolResultIn("call_x"), failedOut("error", "call_x")},
	} {
		r := runCheck(t, plan, buildLog(t, plan, logSpec{events: append(cleanEvents(), evs...), signer: testKey}), signedOpts())
		if f := findCode(r, "failed-answer-acted-on"); f != nil {
			t.Errorf("%s: %+v", name, f)
		}
	}
}

// failedOutMany is a failed model answer holding n tool calls with ids
// prefix0 .. prefix(n-1).
func failedOutMany(prefix string, n int) *eventlog.Event {
	calls := make([]any, n)
	for i := range calls {
		calls[i] = map[string]any{"id": fmt.Sprintf("%s%d", prefix, i), "name": "read_file", "arguments": `{}`}
	}
	return ev(eventlog.KindModelOutput, "", "", map[string]any{"api": "openai.chat", "status": "error", "tool_calls": calls})
}

// A flood of failed answers' tool calls past the bound verify remembers
// is failed-answers-overflow (incomplete) once, so a later call acted on
// is never passed in silence; up to the bound, nothing.
func TestFailedAnswersOverflow(t *testing.T) {
	plan := testPlan()
	const per = 1024
	flood := func(extra int) []*eventlog.Event {
		evs := cleanEvents()
		for i := 0; i < maxAnswersKept/per; i++ {
			evs = append(evs, failedOutMany(fmt.Sprintf("c%d_", i), per))
		}
		if extra > 0 {
			evs = append(evs, failedOutMany("late_", extra), toolResultIn("late_0"))
		}
		return evs
	}
	r := runCheck(t, plan, buildLog(t, plan, logSpec{events: flood(0), signer: testKey}), signedOpts())
	if f := findCode(r, "failed-answers-overflow"); f != nil {
		t.Errorf("at the bound: %+v", f)
	}
	r = runCheck(t, plan, buildLog(t, plan, logSpec{events: flood(3), signer: testKey}), signedOpts())
	n := 0
	for _, f := range r.Findings {
		if f.Code == "failed-answers-overflow" {
			n++
			if f.Class != classIncomplete || !strings.Contains(f.Message, "more than 65536 tool calls") {
				t.Errorf("finding %+v", f)
			}
		}
	}
	if n != 1 || r.Verdict != Incomplete {
		t.Errorf("past the bound: %d overflow findings, verdict %s", n, r.Verdict)
	}
}
