package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

var (
	rev1 = strings.Repeat("1", 64)
	rev2 = strings.Repeat("2", 64)
	rev3 = strings.Repeat("3", 64)
)

// at is a time of the test scenario, minute m after 14:00.
func at(m int) string { return time.Date(2026, 8, 30, 14, m, 0, 0, time.UTC).Format(time.RFC3339) }
func atMs(m int) int64 {
	return time.Date(2026, 8, 30, 14, m, 0, 0, time.UTC).UnixMilli()
}

type timed struct {
	ts string
	m  eventlog.Message
}

// timedLog writes a finished log whose message events have the given times.
func timedLog(t *testing.T, msgs ...timed) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Format: "witness-events", WitnessVersion: "test", Pairing: "jsonrpc-id"}, at(0), eventlog.SourceReported)
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		m := msgs[i].m
		if err := w.Append(&eventlog.Event{Kind: eventlog.KindMessage, TS: msgs[i].ts, Source: eventlog.SourceReported, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eventlog.FinishWith(w, eventlog.EndOptions{TS: at(59), Reason: "test", Source: eventlog.SourceReported}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const historyPolicy = `{"format":"org.social-harness/message-policy/v1","mode":"enforcement",
	"outgoing":[{"use":"credentials"}],
	"english":{"fixedRules":[],"initialRules":[{"id":"reply-briefly","kind":"norm","text":"Replies are brief.","guidance":"Keep it brief."}]},
	"decisionProvider":{"kind":"unavailable"}}`

func act(seq int, minute int, rev string, added, removed []string) Activation {
	if added == nil {
		added = []string{}
	}
	if removed == nil {
		removed = []string{}
	}
	return Activation{Sequence: seq, ActivatedAt: atMs(minute), ActiveRevision: rev, AddedRuleIDs: added, RemovedRuleIDs: removed, Source: "acts:" + string(rune('0'+seq))}
}

// "Each check captures one active installation before constructing
// context and running middleware." and "Changes are not retroactive":
// each message is re-evaluated under the installation active at its time.
func TestEachCheckCapturesOneActiveInstallation(t *testing.T) {
	p := mustPolicy(t, historyPolicy)
	acts := []Activation{
		act(1, 1, rev1, nil, nil),                       // no editable rule
		act(2, 3, rev2, []string{"reply-briefly"}, nil), // owner adds one
		act(3, 5, rev3, nil, []string{"reply-briefly"}), // and removes it again
	}
	tl := BuildTimeline(p, acts, nil)
	if len(tl.Findings) != 0 {
		t.Fatalf("findings on a sound history: %v", tl.Findings)
	}
	events := timedLog(t,
		timed{at(2), out("dm:a", "first")},
		timed{at(4), out("dm:a", "second")},
		timed{at(6), out("dm:a", "third")},
		timed{at(0), out("dm:a", "before any activation")},
	)
	var checks []*Check
	var audit bytes.Buffer
	_, err := EvaluateFile(events, EvaluateOptions{Policy: p, LocalAgent: "agent:me", Timestamp: at(59), Timeline: tl, Audit: &audit,
		Each: func(c *Check) error { checks = append(checks, c); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 3 {
		t.Fatalf("%d checks, want 3 (the message before the first activation is not checked)", len(checks))
	}
	want := []struct{ rev, reason, capturedAt string }{
		{rev1, ReasonAdmission, at(2)},
		{rev2, ReasonUnavailable, at(4)}, // reply-briefly active, no provider
		{rev3, ReasonAdmission, at(6)},
	}
	for i, w := range want {
		c := checks[i]
		if c.Input.ConfigurationDigest != w.rev || c.Decision.Reason != w.reason || c.Input.CapturedAt != w.capturedAt {
			t.Errorf("check %d: revision %s reason %s capturedAt %s, want %s %s %s", i+1, short(c.Input.ConfigurationDigest), c.Decision.Reason, c.Input.CapturedAt, short(w.rev), w.reason, w.capturedAt)
		}
	}
	if n := len(tl.Findings); n != 1 || tl.Findings[0].Kind != FindingCapturedBeforeHistory {
		t.Errorf("findings %v, want one captured-before-any-activation", tl.Findings)
	}
	// the flat evaluation (the policy file's initialRules throughout)
	// disagrees on the first and third message
	var flat []*Check
	if _, err := EvaluateFile(events, EvaluateOptions{Policy: p, LocalAgent: "agent:me", Timestamp: at(59),
		Each: func(c *Check) error { flat = append(flat, c); return nil }}); err != nil {
		t.Fatal(err)
	}
	if flat[0].Decision.Reason != ReasonUnavailable || flat[2].Decision.Reason != ReasonUnavailable {
		t.Errorf("flat evaluation: %s %s", flat[0].Decision.Reason, flat[2].Decision.Reason)
	}
	// the snapshot keeps the history's activation records and verifies
	v, err := VerifyAudit(bytes.NewReader(audit.Bytes()), "a.ndjson", nil)
	if err != nil || v.Err() != nil || v.CheckCount != 3 || v.ActivationCount != 3 {
		t.Fatalf("snapshot: %+v %v", v, err)
	}
	// and placing its own checks in its own history finds nothing
	path := filepath.Join(t.TempDir(), "a.ndjson")
	if err := os.WriteFile(path, audit.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckAuditActivations(path, p, nil, nil)
	if err != nil || len(rep.Findings) != 0 || rep.Checks != 3 {
		t.Fatalf("own history: %+v %v", rep, err)
	}
	// without activation 2, the check under rev2 claims a revision never activated
	rep, err = CheckAuditActivations(path, p, []Activation{acts[0], acts[2]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, f := range rep.Findings {
		kinds = append(kinds, f.Kind)
	}
	if strings.Join(kinds, ",") != FindingUnknownRuleRemoved+","+FindingRevisionNeverActive {
		t.Errorf("findings %v", rep.Findings)
	}
}

// "a check claiming a revision never activated" is a finding; a check
// still on the installation replaced just before its capture is not
// ("Checks already in flight finish on that installation").
func TestCheckWhoseRevisionHasNoMatchingActivationIsAFinding(t *testing.T) {
	tl := BuildTimeline(mustPolicy(t, historyPolicy), []Activation{
		act(1, 1, rev1, nil, nil), act(2, 3, rev2, []string{"reply-briefly"}, nil), act(3, 5, rev3, nil, []string{"reply-briefly"}),
	}, nil)
	cases := []struct {
		claim CheckClaim
		want  string
	}{
		{CheckClaim{CheckID: "chk_a", Revision: rev2, CapturedAt: at(4)}, ""},
		{CheckClaim{CheckID: "chk_b", Revision: rev1, CapturedAt: at(4)}, ""}, // in flight across the swap at 14:03
		{CheckClaim{CheckID: "chk_c", Revision: rev1, CapturedAt: at(6)}, FindingRevisionNotAtCapture},
		{CheckClaim{CheckID: "chk_d", Revision: strings.Repeat("9", 64), CapturedAt: at(4)}, FindingRevisionNeverActive},
		{CheckClaim{CheckID: "chk_e", Revision: rev1, CapturedAt: at(0)}, FindingCapturedBeforeHistory},
		{CheckClaim{CheckID: "chk_f", Revision: rev1, CapturedAt: ""}, FindingNoCaptureTime},
	}
	for _, c := range cases {
		fs := tl.CheckAgainst(c.claim)
		got := ""
		if len(fs) > 0 {
			got = fs[0].Kind
		}
		if got != c.want || len(fs) > 1 {
			t.Errorf("%s: findings %v, want %q", c.claim.CheckID, fs, c.want)
		}
	}
}

// Hostile histories: every inconsistency is a finding, none is repaired.
func TestActivationHistoryHostileInputs(t *testing.T) {
	p := mustPolicy(t, historyPolicy)
	read := func(rev string, ids ...string) *PolicyRead {
		pr := &PolicyRead{Source: "read-" + short(rev), ActiveRevision: rev}
		for _, id := range ids {
			pr.Rules = append(pr.Rules, EnglishRule{ID: id, Kind: KindNorm, Text: "text of " + id, Guidance: "g"})
		}
		return pr
	}
	cases := []struct {
		name  string
		acts  []Activation
		reads []*PolicyRead
		want  []string
	}{
		{"sound", []Activation{act(1, 1, rev1, []string{"reply-briefly"}, nil)}, nil, nil},
		{"same revision, same rules (a no-op edit or restart)", []Activation{act(1, 1, rev1, []string{"reply-briefly"}, nil), act(2, 2, rev1, nil, nil)}, nil, nil},
		{"duplicate revision naming two installations", []Activation{act(1, 1, rev1, nil, nil), act(2, 2, rev1, []string{"reply-briefly"}, nil)}, nil,
			[]string{FindingRevisionReused}},
		{"duplicate sequence", []Activation{act(1, 1, rev1, nil, nil), act(1, 2, rev2, []string{"reply-briefly"}, nil)}, nil,
			[]string{FindingDuplicateSequence}},
		{"out-of-order times", []Activation{act(1, 5, rev1, nil, nil), act(2, 2, rev2, []string{"reply-briefly"}, nil)}, nil,
			[]string{FindingOutOfOrderTime}},
		{"a rule id added twice", []Activation{act(1, 1, rev1, []string{"reply-briefly"}, nil), act(2, 2, rev2, []string{"reply-briefly"}, nil)}, nil,
			[]string{FindingRuleAddedTwice}},
		{"a rule id added twice in one record", []Activation{act(1, 1, rev1, []string{"reply-briefly", "reply-briefly"}, nil)}, nil,
			[]string{FindingRuleAddedTwice}},
		{"replace: removed and added in one record", []Activation{act(1, 1, rev1, []string{"reply-briefly"}, nil), act(2, 2, rev2, []string{"reply-briefly"}, []string{"reply-briefly"})}, nil, nil},
		{"removing an unknown id", []Activation{act(1, 1, rev1, nil, []string{"ghost"})}, nil, []string{FindingUnknownRuleRemoved}},
		{"editing a fixed rule", []Activation{act(1, 1, rev1, []string{"credentials"}, nil)}, nil, []string{FindingFixedRuleEdited}},
		{"a rule whose text nothing gives", []Activation{act(1, 1, rev1, []string{"mystery"}, nil)}, nil, []string{FindingRuleTextUnknown}},
		{"policy_read disagrees", []Activation{act(1, 1, rev1, []string{"reply-briefly"}, nil)}, []*PolicyRead{read(rev1, "reply-briefly", "extra")},
			[]string{FindingPolicyReadDisagrees}},
		{"policy_read of a revision never activated", []Activation{act(1, 1, rev1, nil, nil)}, []*PolicyRead{read(rev2)},
			[]string{FindingPolicyReadNotActive}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := BuildTimeline(p, c.acts, c.reads)
			got := []string{}
			for _, f := range tl.Findings {
				got = append(got, f.Kind)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("findings %v, want %v", tl.Findings, c.want)
			}
		})
	}
	// a rule's text comes from the policy_read list of its revision, and an
	// unknown text leaves that installation (and only it) not rebuilt
	tl := BuildTimeline(p, []Activation{act(1, 1, rev1, []string{"tone"}, nil), act(2, 2, rev2, nil, []string{"tone"})},
		[]*PolicyRead{read(rev1, "tone")})
	if !tl.Steps[0].Known || tl.Steps[0].Policy.English.InitialRules[0].Text != "text of tone" {
		t.Errorf("step 1 not rebuilt from its policy_read list: %+v", tl.Steps[0])
	}
}

// "policy_read returns each fixed rule once, as a FixedRule ... from names
// the variant": the list is decoded strictly.
func TestPolicyReadListIsDecodedStrictly(t *testing.T) {
	good := `{"activeRevision":"` + rev1 + `",
	  "fixedRules":[{"from":"code","middleware":"org.social-harness/credentials","id":"credentials","kind":"norm"},
	                {"from":"english","id":"no-calendar-detail","kind":"safety","text":"No calendar details."}],
	  "rules":[{"id":"reply-briefly","kind":"norm","text":"Brief.","guidance":"Keep it brief."}]}`
	pr, err := DecodePolicyRead([]byte(good), "read.json")
	if err != nil || len(pr.FixedRules) != 2 || pr.FixedRules[0].Middleware == "" || pr.FixedRules[1].Text == "" || len(pr.Rules) != 1 {
		t.Fatalf("%+v %v", pr, err)
	}
	bad := map[string]string{
		"unknown property":      `{"activeRevision":"` + rev1 + `","rules":[],"extra":1}`,
		"code rule with text":   `{"activeRevision":"` + rev1 + `","fixedRules":[{"from":"code","middleware":"m","id":"x","kind":"norm","text":"t"}],"rules":[]}`,
		"fixed id listed twice": `{"activeRevision":"` + rev1 + `","fixedRules":[{"from":"english","id":"x","kind":"safety","text":"t"},{"from":"english","id":"x","kind":"safety","text":"t"}],"rules":[]}`,
		"editable id is fixed":  `{"activeRevision":"` + rev1 + `","fixedRules":[{"from":"english","id":"x","kind":"safety","text":"t"}],"rules":[{"id":"x","kind":"safety","text":"t"}]}`,
		"editable id twice":     `{"activeRevision":"` + rev1 + `","rules":[{"id":"x","kind":"safety","text":"t"},{"id":"x","kind":"safety","text":"t"}]}`,
		"bad revision":          `{"activeRevision":"abc","rules":[]}`,
		"unknown origin":        `{"activeRevision":"` + rev1 + `","fixedRules":[{"from":"plugin","id":"x","kind":"norm"}],"rules":[]}`,
	}
	for name, doc := range bad {
		if _, err := DecodePolicyRead([]byte(doc), "read.json"); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "read.json:") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestActivationsDecoded(t *testing.T) {
	doc := `{"decisions":[{"x":1}],"activations":[{"activatedAt":1,"activeRevision":"` + rev1 + `","addedRuleIds":["a"],"removedRuleIds":[]},
	  {"type":"activation","sequence":7,"activatedAt":2,"activeRevision":"` + rev2 + `","addedRuleIds":[],"removedRuleIds":["a"]}]}`
	acts, err := DecodeActivations([]byte(doc), "feed.json")
	if err != nil || len(acts) != 2 || acts[0].Sequence != 1 || acts[1].Sequence != 7 || acts[1].RemovedRuleIDs[0] != "a" {
		t.Fatalf("%+v %v", acts, err)
	}
	for name, bad := range map[string]string{
		"rule text in a record": `{"activations":[{"activatedAt":1,"activeRevision":"` + rev1 + `","addedRuleIds":[],"removedRuleIds":[],"text":"x"}]}`,
		"no revision":           `{"activations":[{"activatedAt":1,"addedRuleIds":[],"removedRuleIds":[]}]}`,
		"not an array":          `{"activations":{}}`,
	} {
		if _, err := DecodeActivations([]byte(bad), "feed.json"); exitcode.Of(err) != exitcode.Tampered {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodePolicyRead(f *testing.F) {
	f.Add([]byte(`{"activeRevision":"` + rev1 + `","fixedRules":[{"from":"code","middleware":"m","id":"c","kind":"norm"}],"rules":[{"id":"r","kind":"norm","text":"t","guidance":"g"}]}`))
	f.Add([]byte(`{"activeRevision":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pr, err := DecodePolicyRead(data, "fuzz.json")
		if err == nil && (pr == nil || !isLowerHex64(pr.ActiveRevision)) {
			t.Fatalf("accepted %q as %+v", data, pr)
		}
	})
}

func FuzzDecodeActivations(f *testing.F) {
	f.Add([]byte(`{"activations":[{"activatedAt":1,"activeRevision":"` + rev1 + `","addedRuleIds":["a","a"],"removedRuleIds":["b"]}]}`))
	f.Add([]byte(`{"activations":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		acts, err := DecodeActivations(data, "fuzz.json")
		if err != nil {
			return
		}
		// whatever was accepted, the history replays without panicking
		tl := BuildTimeline(&Policy{}, acts, nil)
		for _, s := range tl.Steps {
			tl.CheckAgainst(CheckClaim{Revision: s.Activation.ActiveRevision, CapturedAt: "2026-08-30T14:00:00Z"})
		}
	})
}
