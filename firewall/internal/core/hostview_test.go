package core

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// sampleChecks evaluates the bundled scenario under policy.json with the
// scripted provider and returns the engine and every check.
func sampleChecks(t *testing.T, prov Provider, audit *bytes.Buffer) (*Engine, []*Check) {
	t.Helper()
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var checks []*Check
	opts := EvaluateOptions{Policy: p, Provider: prov, LocalAgent: "agent:ada", Timestamp: "2026-08-30T14:33:00+00:00",
		Each: func(c *Check) error { checks = append(checks, c); return nil }}
	if audit != nil {
		opts.Audit = audit
	}
	events := logOfAt(t, "sess-messages", sampleMessages()...)
	if _, err := Evaluate(bytes.NewReader(events), "messages.events.jsonl", sha256Hex(events), opts); err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngine(p, prov, "agent:ada", "")
	if err != nil {
		t.Fatal(err)
	}
	return eng, checks
}

func checkOf(t *testing.T, checks []*Check, event string) *Check {
	t.Helper()
	for _, c := range checks {
		if c.Input.Candidate.Event == event {
			return c
		}
	}
	t.Fatalf("no check of %s", event)
	return nil
}

// "The error's message includes each next action and the opaque check
// reference so hosts retaining only text can act on the feedback and
// correlate a refusal with the operator audit."
func TestSendErrorMessageIncludesEachNextActionAndTheCheckReference(t *testing.T) {
	eng, checks := sampleChecks(t, scriptedProvider{}, nil)
	cases := []struct {
		event, reason string
		parts         []string
	}{
		// a code norm without registered feedback: the decision's next action
		{"e5", ReasonNormViolation, []string{"norm violation", "next action: revise"}},
		// a settled English prohibition
		{"e9", ReasonProhibition, []string{"prohibited message", "next action: stop"}},
		// the autonomy rule's registered feedback and its next action
		{"e16", ReasonApprovalRequired, []string{"required approval absent", "next action: seek-approval (spend-approval: Ask the owner to approve the spending first.)"}},
	}
	for _, c := range cases {
		chk := checkOf(t, checks, c.event)
		se := eng.SendError(chk)
		if se == nil || se.Reason != c.reason {
			t.Fatalf("%s: send error %+v, want reason %s", c.event, se, c.reason)
		}
		text := se.Error()
		if !strings.HasSuffix(text, "; check "+chk.CheckID) || !CheckIDPattern.MatchString(chk.CheckID) {
			t.Errorf("%s: %q does not end with the check reference %s", c.event, text, chk.CheckID)
		}
		for _, p := range c.parts {
			if !strings.Contains(text, p) {
				t.Errorf("%s: %q does not contain %q", c.event, text, p)
			}
		}
		if strings.Contains(text, "probability") || strings.Contains(text, "distribution") {
			t.Errorf("%s: the message carries provider output: %q", c.event, text)
		}
	}
	// admitted sends and incoming checks have no send error
	for _, ev := range []string{"e1", "e8", "e17"} {
		if se := eng.SendError(checkOf(t, checks, ev)); se != nil {
			t.Errorf("%s: unexpected send error %v", ev, se)
		}
	}
}

// subjectProvider answers like scriptedProvider and has each incoming
// expectation judgment select the given subjects, from the check of e3
// ("Thanks!") on (earlier checks select none, so their dispositions stay).
type subjectProvider struct {
	scriptedProvider
	subjects []string
}

func (s subjectProvider) Decide(q Question) (Judgment, error) {
	j, err := s.scriptedProvider.Decide(q)
	if err == nil && q.Stage == "expectation" && strings.Contains(string(q.Request), `"direction":"incoming"`) && strings.Contains(string(q.Request), `Thanks!`) {
		j.Subjects = s.subjects
	}
	return j, err
}

const subjectPolicy = `{"format":"org.social-harness/message-policy/v1","mode":"%s",
		"incoming":[{"use":"allowed-senders","agentIds":["agent:bo","agent:fac"]}],
		"english":{"fixedRules":[],"initialRules":[{"id":"reply-briefly","kind":"norm","text":"Replies are brief.","guidance":"Keep the reply brief."}]},
		"decisionProvider":{"kind":"jev","model":"m"}}`

// subjectChecks evaluates the sample messages with prov under the subject
// policy in mode and returns the checks and their host views by event.
func subjectChecks(t *testing.T, mode string, prov Provider) (map[string]*Check, map[string]*HostView) {
	t.Helper()
	p := mustPolicy(t, fmt.Sprintf(subjectPolicy, mode))
	checks, views := map[string]*Check{}, map[string]*HostView{}
	eng, _ := NewEngine(p, prov, "agent:ada", "")
	hv := NewHostViewer(eng)
	events := logOfAt(t, "s", sampleMessages()...)
	_, err := Evaluate(bytes.NewReader(events), "e.jsonl", "d", EvaluateOptions{Policy: p, Provider: prov, LocalAgent: "agent:ada",
		Each: func(c *Check) error {
			checks[c.Input.Candidate.Event], views[c.Input.Candidate.Event] = c, hv.View(c)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return checks, views
}

// "Selected guidance subjects carry quoted message text and attribution
// from the same capture, restricted to admitted runtime history and the
// incoming candidate."
func TestGuidanceSubjectsAreRestrictedToAdmittedRuntimeHistoryAndTheIncomingCandidate(t *testing.T) {
	// e1 incoming (admitted), e3 incoming (admitted, the candidate of
	// interest): both may be subjects of e3's guidance.
	_, views := subjectChecks(t, ModeEnforcement, subjectProvider{subjects: []string{"e1", "e3"}})
	e3 := views["e3"]
	if e3 == nil || e3.Guidance == nil {
		t.Fatalf("e3 has no host guidance: %+v", e3)
	}
	got := []string{}
	for _, s := range e3.Guidance.Subjects {
		got = append(got, s.Event)
		if s.Event == "e1" && (s.Sender != "agent:bo" || s.Text != "Can you share the staging deploy status?" || s.PostID != "p-bo-1") {
			t.Errorf("subject e1 lacks its quoted text and attribution: %+v", s)
		}
	}
	if strings.Join(got, ",") != "e1,e3" || len(e3.Guidance.Dropped) != 0 {
		t.Errorf("e3 subjects %v dropped %v, want e1,e3 and none dropped", got, e3.Guidance.Dropped)
	}
}

// "Missing subjects ... produces an unavailable check; guidance mode
// admits without that advice." A subject the runtime was not shown (e2 our
// own send, assessor-only; e8 later and withheld; e99 unknown) makes the
// judgment unavailable, and the finding names the missing subjects.
func TestMissingSubjectsProduceAnUnavailableCheckAndGuidanceModeAdmitsWithoutThatAdvice(t *testing.T) {
	prov := subjectProvider{subjects: []string{"e1", "e2", "e8", "e99"}}
	unavailable := func(c *Check) *Finding {
		for i, f := range c.Decision.Findings {
			if f.Rule == "reply-briefly" && f.Stage == "expectation" && f.Outcome == OutcomeUnavailable {
				return &c.Decision.Findings[i]
			}
		}
		return nil
	}
	checks, views := subjectChecks(t, ModeEnforcement, prov)
	e3 := checks["e3"]
	f := unavailable(e3)
	if f == nil || e3.Decision.Disposition != DispositionWithheld || e3.Decision.Reason != ReasonUnavailable {
		t.Fatalf("enforcement: e3 %s %s, finding %+v", e3.Decision.Disposition, e3.Decision.Reason, f)
	}
	if !strings.HasSuffix(f.Detail, ": e2,e8,e99") {
		t.Errorf("the finding does not name the missing subjects: %q", f.Detail)
	}
	if views["e3"].Guidance != nil {
		t.Errorf("a withheld item carries guidance: %+v", views["e3"].Guidance)
	}
	checks, views = subjectChecks(t, ModeGuidance, prov)
	e3 = checks["e3"]
	if unavailable(e3) == nil || e3.Decision.Disposition != DispositionAdmitted {
		t.Fatalf("guidance mode: e3 %s, unavailable finding %v", e3.Decision.Disposition, unavailable(e3) != nil)
	}
	if g := views["e3"].Guidance; g != nil {
		for _, s := range g.Subjects {
			if s.Event != "e3" {
				t.Errorf("guidance mode kept the advice's subject %s", s.Event)
			}
		}
		if len(g.Dropped) != 0 {
			t.Errorf("dropped subjects reported beside an unavailable judgment: %v", g.Dropped)
		}
	}
	// with only shown subjects the same judgment is available
	checks, _ = subjectChecks(t, ModeEnforcement, subjectProvider{subjects: []string{"e1"}})
	if unavailable(checks["e3"]) != nil || checks["e3"].Decision.Disposition != DispositionAdmitted {
		t.Errorf("shown subjects only: e3 %s", checks["e3"].Decision.Disposition)
	}
}

// "An admitted send returns its check's guidance in its result when the
// check left a norm judgment uncertain: the same instructions as incoming
// guidance, without subjects."
func TestAdmittedSendGuidanceHasNoSubjects(t *testing.T) {
	eng, checks := sampleChecks(t, scriptedProvider{}, nil)
	hv := NewHostViewer(eng)
	var e17 *HostView
	for _, c := range checks {
		if v := hv.View(c); c.Input.Candidate.Event == "e17" {
			e17 = v
		}
	}
	if e17 == nil || e17.Guidance == nil || len(e17.Guidance.Instructions) == 0 {
		t.Fatalf("e17 host view %+v, want guidance", e17)
	}
	if len(e17.Guidance.Subjects) != 0 || e17.SendError != nil {
		t.Errorf("admitted send guidance has subjects %v / error %v", e17.Guidance.Subjects, e17.SendError)
	}
	if !strings.HasPrefix(e17.Line(), "e17 host: guidance instructions=[") {
		t.Errorf("line %q", e17.Line())
	}
}

// A host log that kept only the refusal text is correlated with the audit
// by the check reference in it.
func TestHostLogLineCorrelatesWithTheAudit(t *testing.T) {
	var audit bytes.Buffer
	eng, checks := sampleChecks(t, scriptedProvider{}, &audit)
	e16 := checkOf(t, checks, "e16")
	hostLine := "2026-08-30T14:34:05Z openclaw tool error: " + eng.SendError(e16).Error()
	e9 := checkOf(t, checks, "e9")
	forged := "2026-08-30T14:34:06Z openclaw tool error: firewall refused the send: norm violation; next action: revise; check " + e9.CheckID
	unknown := "later: check chk_" + strings.Repeat("ab", 32) + " refused"
	old := "legacy ref chk_" + strings.Repeat("a", 63) + " and chk_ABC"
	host := strings.Join([]string{"boot", hostLine, forged, unknown, old}, "\n") + "\n"
	res, err := CorrelateHostLog(bytes.NewReader(audit.Bytes()), "audit.ndjson", strings.NewReader(host), "host.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refs) != 3 {
		t.Fatalf("refs %+v", res.Refs)
	}
	r := res.Refs[0]
	if !r.Found || r.Line != 2 || r.Event != "e16" || r.Reason != ReasonApprovalRequired || r.Finding != "" {
		t.Errorf("the host line is not correlated with e16's check: %+v", r)
	}
	if f := res.Refs[1]; !f.Found || f.Event != "e9" || !strings.Contains(f.Finding, "prohibited message") {
		t.Errorf("a line naming another reason than the audit's: %+v", f)
	}
	if u := res.Refs[2]; u.Found || u.Line != 4 || !strings.Contains(u.Finding, "no check record") {
		t.Errorf("unknown reference: %+v", u)
	}
	if res.Findings != 2 || len(res.Malformed) != 2 {
		t.Errorf("findings %d, malformed %v", res.Findings, res.Malformed)
	}
	if res.Refusals == 0 || res.Unmentioned != res.Refusals-2 {
		t.Errorf("refusals %d unmentioned %d", res.Refusals, res.Unmentioned)
	}
	// an incomplete snapshot is refused with its own code
	cut := audit.Bytes()[:len(audit.Bytes())-10]
	if _, err := CorrelateHostLog(bytes.NewReader(cut), "cut.ndjson", strings.NewReader(host), "host.log"); exitcode.Of(err) != exitcode.Incomplete {
		t.Errorf("incomplete snapshot: %v", err)
	}
}

func TestScanCheckRefs(t *testing.T) {
	id := "chk_" + strings.Repeat("0f", 32)
	refs, bad := ScanCheckRefs("x " + id + ". y=" + id + "," + "xchk_" + strings.Repeat("0", 64) + " chk_" + strings.Repeat("0", 65))
	if len(refs) != 2 || refs[0] != id || len(bad) != 1 {
		t.Errorf("refs %v bad %v", refs, bad)
	}
}

func FuzzScanCheckRefs(f *testing.F) {
	f.Add("firewall refused the send: norm violation; next action: revise; check chk_" + strings.Repeat("a", 64))
	f.Add("chk_chk_chk_")
	f.Fuzz(func(t *testing.T, line string) {
		refs, _ := ScanCheckRefs(line)
		for _, r := range refs {
			if !CheckIDPattern.MatchString(r) || !strings.Contains(line, r) {
				t.Fatalf("bad ref %q", r)
			}
		}
	})
}
