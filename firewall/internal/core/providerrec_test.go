package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
)

// meteredProvider answers like scriptedProvider and reports identity,
// usage and latency; it fails the rules in timeout with a typed timeout.
type meteredProvider struct {
	scriptedProvider
	timeout map[string]bool
}

func (meteredProvider) Provenance() map[string]string {
	return map[string]string{"kind": "jev", "model": "jev-1.13.0"}
}

func (m meteredProvider) Decide(q Question) (Judgment, error) {
	lat := 120.5
	if m.timeout[q.Rule] {
		return Judgment{}, &ProviderError{Failure: ProviderFailure{Kind: FailureTimeout, Detail: "no answer within 15000 ms"}, Provider: "typesafe", Model: "jev-1.13.0", LatencyMs: &lat}
	}
	j, err := m.scriptedProvider.Decide(q)
	j.Provider, j.Model, j.Usage, j.LatencyMs = "typesafe", "jev-1.13.0", &Usage{InputTokens: 300, OutputTokens: 7}, &lat
	return j, err
}

// "Decision provider: State and named bounded-choice questions to
// validated distributions, provider/model identity, usage and latency, or
// a typed operational failure." The recorded provider keeps all of them
// through a re-evaluation, and the overlay shows them.
func TestRecordedProviderKeepsIdentityUsageLatencyAndTypedFailures(t *testing.T) {
	var first bytes.Buffer
	_, checks := sampleChecks(t, meteredProvider{timeout: map[string]bool{"spend-approval": true}}, &first)
	e16 := checkOf(t, checks, "e16")
	if e16.Decision.Reason != ReasonUnavailable {
		t.Fatalf("a timed-out autonomy rule: reason %s, want %s", e16.Decision.Reason, ReasonUnavailable)
	}
	path := filepath.Join(t.TempDir(), "first.ndjson")
	if err := os.WriteFile(path, first.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, err := LoadJudgments(path)
	if err != nil {
		t.Fatal(err)
	}
	if pv := rp.Provenance(); pv["provider"] != "typesafe" || pv["model"] != "jev-1.13.0" || pv["kind"] != "recorded" {
		t.Errorf("recorded provenance %v", pv)
	}
	var second bytes.Buffer
	_, again := sampleChecks(t, rp, &second)
	for i, c := range again {
		if c.Decision.Reason != checks[i].Decision.Reason || c.Decision.Disposition != checks[i].Decision.Disposition {
			t.Errorf("%s: re-evaluated %s/%s, recorded %s/%s", c.Input.Candidate.Event, c.Decision.Reason, c.Decision.Disposition, checks[i].Decision.Reason, checks[i].Decision.Disposition)
		}
	}
	r16 := checkOf(t, again, "e16")
	s := SummarizeTrace(r16.Trace)
	if len(s.Failures) == 0 || !strings.HasPrefix(s.Failures[0], "timeout ") || s.Calls == 0 || s.InputTokens != int64(300*s.Calls) || !s.HasTime {
		t.Errorf("replayed e16 trace summary %+v", s)
	}
	found := false
	for _, f := range r16.Decision.Findings {
		if f.Rule == "spend-approval" && f.Outcome == OutcomeUnavailable && strings.Contains(f.Detail, "decision provider timeout") {
			found = true
		}
	}
	if !found {
		t.Errorf("the replayed typed failure is not the rule's unavailable finding: %+v", r16.Decision.Findings)
	}
	// the provenance differs (recorded vs jev); the provider records must not
	for _, rec := range []string{`"inputTokens":300`, `"kind":"timeout"`, `"latencyMs":120.5`} {
		if n, m := strings.Count(first.String(), rec), strings.Count(second.String(), rec); n == 0 || n != m {
			t.Errorf("%s: %d in the first snapshot, %d in the re-evaluation", rec, n, m)
		}
	}

	g := fixtureGraph(t)
	if _, err := AddAuditOverlay(g, bytes.NewReader(second.Bytes()), "second.ndjson"); err != nil {
		t.Fatal(err)
	}
	var n16, n5 *graph.Node
	for _, n := range g.OfType(WFirewallCheck) {
		switch n.Value(WCheckedEvent) {
		case "e16":
			n16 = n
		case "e5":
			n5 = n
		}
	}
	if n16 == nil || n16.Value(WProviderName) != "typesafe" || n16.Value(WProviderModel) != "jev-1.13.0" ||
		n16.Value(WProviderInputTokens) == "" || n16.Value(WProviderLatencyMs) == "" ||
		!strings.HasPrefix(n16.Value(WProviderFailure), "timeout ") {
		t.Errorf("e16 overlay node lacks provider records: %+v", n16)
	}
	if n5 == nil || n5.Value(WProviderCalls) == "" {
		t.Errorf("e5 overlay node: %+v", n5)
	}
}

// A trace entry naming an unknown failure kind or negative usage is
// malformed, named with its field.
func TestRecordedProviderRefusesBadRecords(t *testing.T) {
	var audit bytes.Buffer
	sampleChecks(t, meteredProvider{timeout: map[string]bool{"spend-approval": true}}, &audit)
	for name, edit := range map[string][2]string{
		"unknown failure": {`"kind":"timeout"`, `"kind":"melted"`},
		"negative usage":  {`"inputTokens":300`, `"inputTokens":-1`},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(audit.String(), edit[0], edit[1], 1)
			var perr error
			_, err := VerifyAudit(strings.NewReader(bad), "a.ndjson", func(l AuditLine) error {
				_, e := readTrace(l)
				if e != nil && perr == nil {
					perr = e
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if perr == nil || !strings.Contains(perr.Error(), "a.ndjson:") {
				t.Errorf("no error naming the file and line: %v", perr)
			}
		})
	}
}
