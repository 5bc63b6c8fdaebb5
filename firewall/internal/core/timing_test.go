package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// "An answer checked while its request closed or passed its deadline is
// refused with its collective failure, and its check still commits as
// withheld."
func TestAnAnswerWhoseRequestClosedOrPassedItsDeadlineIsRefusedAndItsCheckCommitsWithheld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		close   bool
		elapsed time.Duration
		want    string
	}{
		{"closed before the answer binds", true, 0, FailureRequestClosed},
		{"deadline passed during the check", false, 20 * time.Second, FailureDeadlinePassed},
		{"still open before its deadline", false, 5 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newRun(t, collPolicy)
			req := coll(Incoming, OpRequest, "op1", "agent:fac", "Which day?")
			req.Deadline = deadline(20)
			one(t, x.at(1, req))
			if tc.close {
				x.at(3, coll(Incoming, OpClose, "op1", "agent:fac", ""))
			}
			x.at(4, coll(Outgoing, OpClaim, "op1", "agent:me", "")) // the claim just before the bind, read before the answer
			x.r.Elapsed = func(string) time.Duration { return tc.elapsed }
			c := one(t, x.at(5, coll(Outgoing, OpAnswer, "op1", "agent:me", "Tuesday.")))
			d := c.Decision
			if d.CollectiveFailure != tc.want {
				t.Fatalf("failure %q, want %q", d.CollectiveFailure, tc.want)
			}
			if tc.want != "" && (d.Disposition != DispositionWithheld || d.Reason != ReasonAdmission || x.r.ops["op1"].acknowledged) {
				t.Errorf("refused answer: disposition %s reason %s acknowledged %v", d.Disposition, d.Reason, x.r.ops["op1"].acknowledged)
			}
			if tc.want == "" && d.Disposition != DispositionAdmitted {
				t.Errorf("open request: %s", d.Disposition)
			}
		})
	}
}

// "A gather or all_gather whose deadline passed during its check fails as
// deadline-passed and nothing posts."
func TestAGatherOrAllGatherWhoseDeadlinePassedDuringItsCheckFailsAndNothingPosts(t *testing.T) {
	for _, op := range []string{OpGather, OpAllGather} {
		t.Run(op, func(t *testing.T) {
			x := newRun(t, collPolicy)
			m := coll(Outgoing, op, "op1", "agent:me", "Which day?")
			m.Deadline = deadline(10)
			x.r.Elapsed = func(string) time.Duration { return 15 * time.Second }
			c := one(t, x.at(1, m))
			if c.Decision.CollectiveFailure != FailureDeadlinePassed || x.r.ops["op1"].started {
				t.Fatalf("%s: failure %q started %v", op, c.Decision.CollectiveFailure, x.r.ops["op1"].started)
			}
			next := one(t, x.at(20, coll(Outgoing, OpDirect, "", "agent:me", "next")))
			if len(next.Input.History) != 0 {
				t.Errorf("something posted: %v", next.Input.History)
			}
			// a quick check inside the deadline starts the operation
			y := newRun(t, collPolicy)
			y.r.Elapsed = func(string) time.Duration { return time.Second }
			m.OperationID = "op2"
			if c := one(t, y.at(1, m)); c.Decision.CollectiveFailure != "" || !y.r.ops["op2"].started {
				t.Errorf("in time: %q", c.Decision.CollectiveFailure)
			}
		})
	}
}

// "A request whose deadline passed before its check retires unchecked";
// one whose deadline passes during its check is withheld; neither is
// presented.
func TestARequestWhoseDeadlinePassedBeforeItsCheckRetiresUnchecked(t *testing.T) {
	x := newRun(t, collPolicy)
	late := coll(Incoming, OpRequest, "op1", "agent:fac", "Which day?")
	late.Deadline = deadline(5)
	if cs := x.at(6, late); len(cs) != 0 {
		t.Fatalf("a late request was checked: %d checks", len(cs))
	}
	if o := x.r.ops["op1"]; !o.retired || o.shown {
		t.Errorf("op1 retired %v shown %v", o.retired, o.shown)
	}
	during := coll(Incoming, OpRequest, "op2", "agent:fac", "Which hotel?")
	during.Deadline = deadline(10)
	x.r.Elapsed = func(string) time.Duration { return 5 * time.Second }
	c := one(t, x.at(7, during))
	if c.Decision.Disposition != DispositionWithheld || c.Decision.CollectiveFailure != FailureDeadlinePassed || x.r.ops["op2"].shown {
		t.Errorf("during: %s %q", c.Decision.Disposition, c.Decision.CollectiveFailure)
	}
	next := one(t, x.at(30, coll(Incoming, OpDirect, "", "agent:bo", "hi")))
	if next.Input.HistoryMarks["e1"] != VisibleAssessor || next.Input.HistoryMarks["e2"] != VisibleWithheld {
		t.Errorf("neither is presented: %v", next.Input.HistoryMarks)
	}
}

// "Restart: an interrupted check binds nothing, and an unacknowledged
// admitted request becomes operationFailed."
func TestRestartAnInterruptedCheckBindsNothingAndAnUnacknowledgedRequestFails(t *testing.T) {
	x := newRun(t, collPolicy)
	one(t, x.at(1, coll(Incoming, OpRequest, "op1", "agent:fac", "Which day?")))
	one(t, x.at(2, coll(Incoming, OpRequest, "op2", "agent:fac", "Which hotel?")))
	one(t, x.at(3, coll(Outgoing, OpAnswer, "op2", "agent:me", "The blue one.")))
	// a gather whose check the restart interrupts
	g := Candidate{Event: "e9", Message: coll(Outgoing, OpGather, "op3", "agent:me", "Budget?"), ts: "2026-08-30T14:33:04Z"}
	ic, err := x.r.Interrupted(g)
	if err != nil {
		t.Fatal(err)
	}
	if ic.Decision.Disposition != DispositionInterrupted || x.r.ops["op3"] != nil && x.r.ops["op3"].started {
		t.Fatalf("interrupted: %s", ic.Decision.Disposition)
	}
	fails, err := x.r.Restart("2026-08-30T14:33:05Z")
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 1 {
		t.Fatalf("%d operationFailed items, want 1 (op1; op2 was acknowledged)", len(fails))
	}
	f := fails[0]
	m := f.Input.Candidate.Message
	if m.Operation != OpOperationFailed || m.OperationID != "op1" || m.Failure != FailureRestart || f.Decision.Disposition != DispositionAdmitted {
		t.Errorf("failure item: %+v %s", m, f.Decision.Disposition)
	}
	next := one(t, x.at(6, coll(Incoming, OpDirect, "", "agent:bo", "hi")))
	for _, h := range next.Input.History {
		if h == "e9" {
			t.Error("the interrupted gather bound")
		}
	}
	if len(x.r.ops) != 0 {
		t.Errorf("collective state survived the restart: %d ops", len(x.r.ops))
	}
}

// The timing fixture: a request answered after its deadline, a gather and
// an all_gather whose deadlines pass during their checks, and a request
// whose deadline passes during its check. Only the durations recorded in
// an audit (elapsedMs, or its provider calls' latency) make these rules
// apply: re-evaluation has no clock of its own.
func sampleTimingMessages() []eventlog.Message {
	at := func(sec int) string { return time.Date(2026, 8, 30, 14, 34, sec, 0, time.UTC).Format(time.RFC3339) }
	req := coll(Incoming, OpRequest, "op-q", "agent:fac", "Which day suits you?")
	req.Deadline = at(10)
	g := coll(Outgoing, OpGather, "op-g", "agent:me", "Budget per night?")
	g.Deadline = at(10)
	ag := coll(Outgoing, OpAllGather, "op-a", "agent:me", "Arrival times?")
	ag.Deadline = at(10)
	late := coll(Incoming, OpRequest, "op-r", "agent:fac", "Which hotel?")
	late.Deadline = at(5)
	return []eventlog.Message{req,
		coll(Outgoing, OpClaim, "op-q", "agent:me", ""),
		coll(Outgoing, OpAnswer, "op-q", "agent:me", "Tuesday."),
		g, ag, late,
		coll(Outgoing, OpDirect, "", "agent:me", "Thanks, all.")}
}

// timingDurations are the durations the fixture's audit records, by event.
var timingDurations = map[string]time.Duration{"e3": 20 * time.Second, "e4": 15 * time.Second, "e5": 15 * time.Second, "e6": 10 * time.Second}

func sampleTimingAudit(t testing.TB, events []byte) []byte {
	t.Helper()
	var audit bytes.Buffer
	_, err := Evaluate(bytes.NewReader(events), "timing.events.jsonl", sha256Hex(events),
		EvaluateOptions{Policy: mustPolicy(t, collPolicy), LocalAgent: "agent:me", Timestamp: "2026-08-30T14:33:00+00:00", Audit: &audit,
			Elapsed: func(ev string) time.Duration { return timingDurations[ev] }})
	if err != nil {
		t.Fatal(err)
	}
	return audit.Bytes()
}

// "A gather or all_gather whose deadline passed during its check fails as
// deadline-passed and nothing posts", and "an answer checked while its
// request ... passed its deadline is refused with its collective failure":
// offline, the check's duration comes from the recorded audit, so a
// re-evaluation with --recorded applies the rules the daemon applied, and
// one without it (no clock) does not.
func TestARecordedDurationThatCrossesADeadlineAppliesTheTimingRules(t *testing.T) {
	events := logOfAt(t, "sess-timing", sampleTimingMessages()...)
	path := filepath.Join(t.TempDir(), "timing.audit.ndjson")
	if err := os.WriteFile(path, sampleTimingAudit(t, events), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, err := LoadJudgments(path)
	if err != nil {
		t.Fatal(err)
	}
	for ev, d := range timingDurations {
		if got := rp.Elapsed(ev); got != d {
			t.Errorf("%s: recorded %v, want %v", ev, got, d)
		}
	}
	run := func(elapsed func(string) time.Duration) map[string]*Check {
		got := map[string]*Check{}
		_, err := Evaluate(bytes.NewReader(events), "timing.events.jsonl", sha256Hex(events),
			EvaluateOptions{Policy: mustPolicy(t, collPolicy), Provider: rp, LocalAgent: "agent:me", Timestamp: "2026-08-30T14:33:00+00:00",
				Elapsed: elapsed, Each: func(c *Check) error { got[c.Input.Candidate.Event] = c; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	with, without := run(rp.Elapsed), run(nil)
	for _, ev := range []string{"e3", "e4", "e5", "e6"} {
		c, ok := with[ev]
		if !ok {
			t.Fatalf("%s not checked", ev)
		}
		if c.Decision.CollectiveFailure != FailureDeadlinePassed || c.Decision.Disposition != DispositionWithheld {
			t.Errorf("%s with the recorded duration: %s %q, want withheld %q", ev, c.Decision.Disposition, c.Decision.CollectiveFailure, FailureDeadlinePassed)
		}
		if c.ElapsedMs != float64(timingDurations[ev]/time.Millisecond) {
			t.Errorf("%s: elapsedMs %v", ev, c.ElapsedMs)
		}
		if w := without[ev]; w.Decision.CollectiveFailure != "" {
			t.Errorf("%s without a clock: failure %q", ev, w.Decision.CollectiveFailure)
		}
	}
	for _, ev := range with["e7"].Input.History {
		if ev == "e3" || ev == "e4" || ev == "e5" {
			t.Errorf("%s failed its deadline, yet posted: the next window is %v", ev, with["e7"].Input.History)
		}
	}
	if h := without["e7"].Input.History; len(h) <= len(with["e7"].Input.History) {
		t.Errorf("without a clock the sends post: windows %v and %v", h, with["e7"].Input.History)
	}
}

// A check record without elapsedMs takes its duration from its provider
// calls' summed latencyMs (provider records), and a negative sum counts as
// unknown.
func TestARecordedDurationFallsBackToTheProviderLatency(t *testing.T) {
	lat, back := 1500.0, -3000.0
	for _, tc := range []struct {
		trace []Judgment
		want  time.Duration
	}{
		{[]Judgment{{LatencyMs: &lat}, {LatencyMs: &lat}, {}}, 3 * time.Second},
		{[]Judgment{{LatencyMs: &back}}, 0},
		{nil, 0},
	} {
		raw := []byte(`{"type":"check","input":{"candidate":{"event":"e9"}},"elapsedMs":0}`)
		tree, err := jsontree.Parse(raw, "a.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		ev, d, err := readElapsed(AuditLine{File: "a.ndjson", No: 2, Raw: raw, Tree: tree}, tc.trace)
		if err != nil || ev != "e9" || d != tc.want {
			t.Errorf("trace %v: %s %v %v, want e9 %v", tc.trace, ev, d, err, tc.want)
		}
	}
}

// "An answer is checked before its request is claimed, so a close or the
// deadline can still arrive during the check." A close the log records
// after the answer was certified during the answer's check when its time
// is before the check's end (the claim just before the bind): the daemon
// saw it and refused the answer. One after the end came after the bind.
func TestACloseCanStillArriveDuringTheAnswersCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		closeAt   int  // seconds after 14:33:00, logged after the answer
		readAhead bool // the runner knows the log's closes (EvaluateFile does)
		want      string
	}{
		{"certified during the check", 8, true, FailureRequestClosed},
		{"certified after the bind", 20, true, ""},
		{"without read-ahead", 8, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newRun(t, collPolicy)
			one(t, x.at(1, coll(Incoming, OpRequest, "op1", "agent:fac", "Which day?")))
			x.at(4, coll(Outgoing, OpClaim, "op1", "agent:me", ""))
			if tc.readAhead {
				x.r.Closes = map[string]time.Time{}
				CloseTimes(x.r.Closes, Candidate{Message: coll(Incoming, OpClose, "op1", "agent:fac", ""), ts: x.now.Add(time.Duration(tc.closeAt) * time.Second).Format(time.RFC3339)})
			}
			x.r.Elapsed = func(string) time.Duration { return 10 * time.Second } // the check ends at 15
			c := one(t, x.at(5, coll(Outgoing, OpAnswer, "op1", "agent:me", "Tuesday.")))
			x.at(tc.closeAt, coll(Incoming, OpClose, "op1", "agent:fac", ""))
			d := c.Decision
			if d.CollectiveFailure != tc.want {
				t.Fatalf("failure %q, want %q", d.CollectiveFailure, tc.want)
			}
			if (tc.want != "") != (d.Disposition == DispositionWithheld) || (tc.want != "") == x.r.ops["op1"].acknowledged {
				t.Errorf("disposition %s acknowledged %v", d.Disposition, x.r.ops["op1"].acknowledged)
			}
		})
	}
}

// Without a recorded duration the check is instantaneous, so a close the
// log records after the answer, even at the same time, came after it: the
// log order decides (EvaluateFile reads the closes ahead).
func TestACloseLoggedAfterAnInstantAnswerCheckCameAfterIt(t *testing.T) {
	req := coll(Incoming, OpRequest, "op1", "agent:fac", "Which day?")
	closing := coll(Incoming, OpClose, "op1", "agent:fac", "")
	events := logOfAt(t, "sess-close", req, coll(Outgoing, OpClaim, "op1", "agent:me", ""), coll(Outgoing, OpAnswer, "op1", "agent:me", "Tuesday."), closing)
	path := filepath.Join(t.TempDir(), "close.events.jsonl")
	if err := os.WriteFile(path, events, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, elapsed := range []time.Duration{0, time.Second} {
		var answer *Check
		opts := EvaluateOptions{Policy: mustPolicy(t, collPolicy), LocalAgent: "agent:me",
			Elapsed: func(string) time.Duration { return elapsed },
			Each: func(c *Check) error {
				if c.Input.Candidate.Message.Operation == OpAnswer {
					answer = c
				}
				return nil
			}}
		if _, err := EvaluateFile(path, opts); err != nil {
			t.Fatal(err)
		}
		want := ""
		if elapsed > 0 { // every event of this log has the same time: the close was certified during a 1 s check
			want = FailureRequestClosed
		}
		if answer == nil || answer.Decision.CollectiveFailure != want {
			t.Errorf("elapsed %v: answer %+v, want failure %q", elapsed, answer, want)
		}
	}
}

// FuzzReadElapsed reads a check record's duration (elapsedMs, else its
// trace's latencyMs) from any JSON: never a panic, never a negative or
// overflowing duration.
func FuzzReadElapsed(f *testing.F) {
	f.Add([]byte(`{"type":"check","input":{"candidate":{"event":"e3"}},"elapsedMs":20000,"trace":[]}`))
	f.Add([]byte(`{"input":{"candidate":{"event":"e1"}},"elapsedMs":0,"trace":[{"key":"` + strings.Repeat("a", 64) + `","latencyMs":120.5}]}`))
	f.Add([]byte(`{"elapsedMs":1e308,"input":[]}`))
	f.Add([]byte(`{"elapsedMs":"x","input":{"candidate":7}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := jsontree.Parse(data, "fuzz")
		if err != nil || tree.Kind != jsontree.Object {
			return
		}
		l := AuditLine{File: "fuzz", No: 1, Raw: data, Tree: tree}
		trace, _ := readTrace(l)
		_, d, _ := readElapsed(l, trace)
		if d < 0 {
			t.Fatalf("negative duration %v from %s", d, data)
		}
	})
}
