package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

const joinTS = "2026-09-01T10:00:00+00:00"

func joinedRun(t *testing.T, logs ...[]byte) *graph.Run {
	t.Helper()
	var in []graph.LogInput
	for i, l := range logs {
		in = append(in, graph.LogInput{Name: []string{"model/events.jsonl", "fs/events.jsonl", "x/events.jsonl"}[i], Data: l})
	}
	r, err := graph.BuildRun(in, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var joinPlan = Plan{Tools: []PlanTool{{Name: "read_text_file"}, {Name: "write_file"}}}

func joinCodes(r *Report) string {
	var out []string
	for _, f := range r.Findings {
		if f.Check == checkJoin || f.Check == CheckInjection {
			out = append(out, f.Code+"@"+f.File+":"+f.EventID)
		}
	}
	return strings.Join(out, ",")
}

func TestInjectionProvenance(t *testing.T) {
	model, mcp := synthlog.InjectionRun(joinTS)
	run := joinedRun(t, model, mcp)
	for _, tc := range []struct {
		untrusted []string
		tools     []PlanTool
		want      string
	}{
		{[]string{"tool:read_text_file:read:/work/inbox/**"}, joinPlan.Tools, "injection-provenance@fs/events.jsonl:e3"},
		{[]string{"tool:read_text_file"}, joinPlan.Tools, "injection-provenance@fs/events.jsonl:e3"},
		// the scope does not cover the file read: trusted
		{[]string{"tool:read_text_file:read:/etc/**"}, joinPlan.Tools, ""},
		{[]string{"resource:file:///work/inbox/**"}, joinPlan.Tools, ""},
		// no seal entry: the check does not run
		{nil, joinPlan.Tools, ""},
	} {
		r := &Report{}
		plan := joinPlan
		plan.Untrusted = tc.untrusted
		checkRun(r, plan, run.Graph, run.Logs)
		if got := joinCodes(r); got != tc.want {
			t.Errorf("untrusted %v: %q, want %q", tc.untrusted, got, tc.want)
		}
		r.Finish()
		listed := false
		for _, c := range r.Checks {
			if c.ID == CheckInjection {
				listed = true
			}
		}
		if listed != (tc.untrusted != nil) {
			t.Errorf("untrusted %v: injection check listed %v", tc.untrusted, listed)
		}
		if tc.want != "" {
			f := r.Findings[0]
			if f.Class != classViolation || len(f.Chain) < 3 || !strings.HasPrefix(f.Chain[0], "fs:e3 tool_call") || !strings.HasPrefix(f.Chain[len(f.Chain)-1], "fs:e2 tool_response") {
				t.Errorf("finding %+v", f)
			}
		}
	}
}

func TestInjectionUnsealedAction(t *testing.T) {
	// a read-only tool that is not sealed, downstream of the untrusted read
	m := synthlog.NewModelLog(joinTS, "unsealed")
	s := synthlog.NewMCPLog(joinTS, "fs", append(synthlog.FilesystemTools, [2]string{"send_mail", `{"readOnlyHint":false}`}))
	m.User("summarise")
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/work/inbox/m.txt"}`})
	s.ToolCall("read_text_file", `{"path":"/work/inbox/m.txt"}`, synthlog.Poison)
	m.ToolResult("a", synthlog.Poison)
	m.Turn("", synthlog.Call{ID: "b", Name: "send_mail", Args: `{"to":"x@example.com"}`})
	s.ToolCall("send_mail", `{"to":"x@example.com"}`, "sent")
	run := joinedRun(t, m.Bytes(), s.Bytes())
	r := &Report{}
	plan := joinPlan
	plan.Untrusted = []string{"tool:read_text_file"}
	checkRun(r, plan, run.Graph, run.Logs)
	if got := joinCodes(r); got != "injection-provenance@fs/events.jsonl:e3" || !strings.Contains(r.Findings[0].Message, "unsealed") {
		t.Fatalf("%s %+v", got, r.Findings)
	}
}

func TestJoinFindings(t *testing.T) {
	m := synthlog.NewModelLog(joinTS, "findings")
	s := synthlog.NewMCPLog(joinTS, "fs", synthlog.FilesystemTools)
	m.User("go")
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/a"}`})
	s.ToolCall("write_file", `{"path":"/b","content":"x"}`, "ok")
	run := joinedRun(t, m.Bytes(), s.Bytes())
	r := &Report{}
	checkRun(r, joinPlan, run.Graph, run.Logs)
	r.Finish()
	if got := joinCodes(r); got != "model-call-not-executed@model/events.jsonl:e2#0,unrequested-tool-call@fs/events.jsonl:e1" {
		t.Fatalf("%s", got)
	}
	if r.Verdict != Violation {
		t.Fatalf("verdict %s", r.Verdict)
	}
	for _, f := range r.Findings {
		if f.Code == "model-call-not-executed" && f.Class != ClassNotice {
			t.Errorf("model-call-not-executed is %s", f.Class)
		}
	}
}

func TestInjectionFromResource(t *testing.T) {
	// the agent put a resource's text into the prompt; the model then
	// asked for a write
	m := synthlog.NewModelLog(joinTS, "resource")
	s := synthlog.NewMCPLog(joinTS, "everything", synthlog.FilesystemTools)
	s.ResourceRead("memo://inbox/1", synthlog.Poison)
	m.User("Here is my memo: " + synthlog.Poison)
	m.Turn("", synthlog.Call{ID: "w", Name: "write_file", Args: `{"path":"/work/precious.txt","content":"pwned"}`})
	s.ToolCall("write_file", `{"path":"/work/precious.txt","content":"pwned"}`, "ok")
	run := joinedRun(t, m.Bytes(), s.Bytes())
	in := run.Graph.Node(graph.MsgIRI(run.Logs[0].Base, "e1"))
	if got := in.Refs(graph.ProvWasDerivedFrom); len(got) != 1 || got[0] != graph.AnswerIRI(run.Logs[1].Base, "e2") {
		t.Fatalf("model input derived from %v", got)
	}
	for untrusted, want := range map[string]string{"resource:memo://inbox/**": "injection-provenance@fs/events.jsonl:e3", "resource:memo://other/**": ""} {
		r := &Report{}
		plan := joinPlan
		plan.Untrusted = []string{untrusted}
		checkRun(r, plan, run.Graph, run.Logs)
		if got := joinCodes(r); got != want {
			t.Errorf("%s: %q, want %q", untrusted, got, want)
		}
	}
}

// A check one log of the run could run is not "not checkable" for the run:
// the system prompt is on the model channel only.
func TestRunNotCheckableIntersects(t *testing.T) {
	dir := t.TempDir()
	m := synthlog.NewModelLog(joinTS, "prompt")
	m.ReportedSystemPrompt("You help with files.")
	m.User("hi")
	m.Turn("hello")
	s := synthlog.NewMCPLog(joinTS, "fs", synthlog.FilesystemTools)
	mf, sf := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(mf, m.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sf, s.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("You help with files."))
	plan := joinPlan
	plan.SystemPromptSHA256 = hex.EncodeToString(sum[:])
	r := &Report{}
	for i, f := range []string{mf, sf} {
		rd, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			err = checkEvents(r, plan, f, rd, eventOptions{AllowUnsigned: true})
		} else {
			err = runEvents(r, plan, Options{EventsFile: mf, RunEvents: []string{sf}, AllowUnsigned: true})
		}
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			break
		}
	}
	r.Finish()
	for _, c := range r.Checks {
		if c.ID == checkPrompt && c.Status != statusPass {
			t.Fatalf("system-prompt %s (%s)", c.Status, c.Reason)
		}
	}
}

// issue 30 item 5: the same untrusted file read twice in one turn. The
// input that carries both results back is an ambiguous join; both
// candidates are untrusted, so the write the next turn asks for is
// downstream of untrusted content: injection-provenance, naming both.
func TestInjectionThroughAmbiguousJoin(t *testing.T) {
	run, plan, r := injectionRun(t, synthlog.InjectionRunTwice)
	want := "ambiguous-join@fs/events.jsonl:e1,ambiguous-join@fs/events.jsonl:e3,ambiguous-join@model/events.jsonl:e2#0,ambiguous-join@model/events.jsonl:e2#1,injection-provenance@fs/events.jsonl:e5"
	if got := joinCodes(r); got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
	f := r.Findings[len(r.Findings)-1]
	if f.Class != classViolation || f.Severity != SevError ||
		!strings.Contains(f.Message, "through an ambiguous join whose every candidate is untrusted: model:e3 joins one of fs:e2 (untrusted), fs:e4 (untrusted)") {
		t.Errorf("finding %+v", f)
	}
	if len(f.Chain) < 3 || !strings.HasPrefix(f.Chain[0], "fs:e5 tool_call") || !strings.HasPrefix(f.Chain[len(f.Chain)-1], "fs:e2 tool_response") {
		t.Errorf("chain %q", f.Chain)
	}
	r.Finish()
	if r.Verdict != Violation {
		t.Errorf("verdict %s", r.Verdict)
	}
	// the scope does not cover the read: neither candidate is untrusted
	r = &Report{}
	plan.Untrusted = []string{"tool:read_text_file:read:/etc/**"}
	checkRun(r, plan, run.Graph, run.Logs)
	if got := joinCodes(r); strings.Contains(got, "injection") {
		t.Errorf("trusted reads: %s", got)
	}
}

// issue 30 item 5: the candidates differ in trust. Each MCP write may be
// the model call asked before any untrusted content or the one asked
// after the poisoned read: verify does not guess, it warns
// (ambiguous-injection-provenance, class violation: never verified).
func TestAmbiguousInjectionProvenance(t *testing.T) {
	run, plan, r := injectionRun(t, synthlog.InjectionRunMixed)
	var warn []Finding
	for _, f := range r.Findings {
		switch f.Code {
		case "injection-provenance":
			t.Errorf("guessed: %+v", f)
		case "ambiguous-injection-provenance":
			warn = append(warn, f)
		}
	}
	if len(warn) != 2 || warn[0].EventID != "e1" || warn[1].EventID != "e5" {
		t.Fatalf("warnings %+v\nall: %s", warn, joinCodes(r))
	}
	for _, f := range warn {
		if f.Severity != SevWarning || f.Class != classViolation || f.File != "fs/events.jsonl" || f.SealClause != "untrusted[0]" ||
			!strings.Contains(f.Message, "joins one of model:e2#0 (trusted), model:e6#0 (untrusted)") {
			t.Errorf("warning %+v", f)
		}
		if len(f.Chain) < 3 || !strings.HasPrefix(f.Chain[len(f.Chain)-1], "fs:e4 tool_response") {
			t.Errorf("chain %q", f.Chain)
		}
	}
	r.Finish()
	if r.Verdict != Violation || r.ExitCode != 1 {
		t.Errorf("verdict %s exit %d", r.Verdict, r.ExitCode)
	}
	// nothing untrusted: no warning, the notices only
	r = &Report{}
	plan.Untrusted = []string{"tool:read_text_file:read:/etc/**"}
	checkRun(r, plan, run.Graph, run.Logs)
	r.Finish()
	if strings.Contains(joinCodes(r), "injection") || r.Verdict != verified {
		t.Errorf("trusted reads: %s, %s", joinCodes(r), r.Verdict)
	}
}

// injectionRun joins the two logs mk makes and checks them under joinPlan
// with the reads under /work/inbox untrusted.
func injectionRun(t *testing.T, mk func(string) ([]byte, []byte)) (*graph.Run, Plan, *Report) {
	t.Helper()
	model, mcp := mk(joinTS)
	run := joinedRun(t, model, mcp)
	plan := joinPlan
	plan.Untrusted = []string{"tool:read_text_file:read:/work/inbox/**"}
	r := &Report{}
	checkRun(r, plan, run.Graph, run.Logs)
	return run, plan, r
}

// In a joined run, an MCP call linked to a tool call of a failed model
// answer is failed-answer-acted-on (incomplete): the graph carries the
// answer's status on the model tool call (witness:modelStatus) only when
// it did not complete. The same call of a complete answer gives none.
func TestFailedAnswerJoined(t *testing.T) {
	for _, status := range []string{"", "error", "partial", "ambiguous"} {
		m := synthlog.NewModelLog(joinTS, "failed")
		s := synthlog.NewMCPLog(joinTS, "fs", synthlog.FilesystemTools)
		m.User("go")
		m.OutStatus = status
		m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/a"}`})
		s.ToolCall("read_text_file", `{"path":"/a"}`, "ok")
		run := joinedRun(t, m.Bytes(), s.Bytes())
		var marked []string
		for _, n := range run.Graph.Nodes {
			if v := n.Value(graph.WModelStatus); v != "" {
				marked = append(marked, v)
			}
		}
		r := &Report{}
		checkRun(r, joinPlan, run.Graph, run.Logs)
		r.Finish()
		f := findCode(r, "failed-answer-acted-on")
		if status == "" {
			if f != nil || len(marked) != 0 || r.Verdict != verified {
				t.Errorf("complete answer: %+v, marked %v, verdict %s", f, marked, r.Verdict)
			}
			continue
		}
		if f == nil || f.Class != classIncomplete || f.File != "fs/events.jsonl" || f.EventID != "e1" || r.Verdict != Incomplete ||
			!strings.Contains(f.Message, "follows from the tool call model:e2#0") || !strings.Contains(f.Message, "whose status is "+status) ||
			len(marked) != 1 || marked[0] != status {
			t.Errorf("%s: %+v, marked %v, verdict %s", status, f, marked, r.Verdict)
		}
	}
}

// An MCP call ambiguous between candidates one of which is a failed
// answer's tool call may follow from it: each such call is named.
func TestFailedAnswerAmbiguousJoin(t *testing.T) {
	m := synthlog.NewModelLog(joinTS, "failed-ambiguous")
	s := synthlog.NewMCPLog(joinTS, "fs", synthlog.FilesystemTools)
	m.User("go")
	m.OutStatus = "error"
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/a"}`})
	s.ToolCall("read_text_file", `{"path":"/a"}`, "ok")
	s.ToolCall("read_text_file", `{"path":"/a"}`, "ok")
	run := joinedRun(t, m.Bytes(), s.Bytes())
	r := &Report{}
	checkRun(r, joinPlan, run.Graph, run.Logs)
	r.Finish()
	var got []string
	for _, f := range r.Findings {
		if f.Code == "failed-answer-acted-on" {
			if !strings.Contains(f.Message, "may follow from (an ambiguous join") || f.Class != classIncomplete {
				t.Errorf("%+v", f)
			}
			got = append(got, f.EventID)
		}
	}
	if strings.Join(got, ",") != "e1,e3" || r.Verdict != Incomplete {
		t.Errorf("findings on %v, verdict %s; want e1,e3, incomplete\n%s", got, r.Verdict, joinCodes(r))
	}
}
