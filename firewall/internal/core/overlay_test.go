package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
)

func fixtureGraph(t *testing.T) *graph.Graph {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "messages.events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := graph.Build(eventlog.NewReader(f, "messages.events.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// "witness graph --firewall-audit FILE adds each check to the graph (an
// activity that used the message, with its disposition, reason, decidedBy
// and cause), linked to the captured message by its post reference."
func TestAuditOverlay(t *testing.T) {
	g := fixtureGraph(t)
	before := g.Len()
	res, err := AddAuditOverlayFile(g, filepath.Join(fixtureDir, "judgments.audit.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Checks != 16 || res.Linked != 16 || g.Len() != before+16 {
		t.Fatalf("overlay %+v, nodes %d -> %d", res, before, g.Len())
	}
	checks := g.OfType(WFirewallCheck)
	var e9 *graph.Node
	for _, n := range checks {
		if n.Value(WCheckedEvent) == "e9" {
			e9 = n
		}
	}
	if e9 == nil {
		t.Fatal("no check of e9")
	}
	used := e9.Refs(graph.ProvUsed)
	msg := g.Node(used[0])
	if len(used) != 1 || msg == nil || msg.Value(graph.WPostID) != "p-ada-6" || msg.Value(graph.WEventID) != "e9" {
		t.Errorf("e9 check used %v", used)
	}
	if e9.Value(WDisposition) != "refused" || e9.Value(WDecisionReason) != ReasonProhibition || e9.Value(WDecisionCause) != CauseJudgment ||
		strings.Join(e9.Values(WDecidedBy), ",") != "no-calendar-detail" || !e9.HasType(graph.ProvActivity) {
		t.Errorf("e9 check %+v", e9.Props)
	}
	// the overlaid graph still writes and reads back as canonical JSON-LD
	var buf bytes.Buffer
	if err := g.WriteJSONLD(&buf); err != nil {
		t.Fatal(err)
	}
	g2, err := graph.ReadJSONLD(bytes.NewReader(buf.Bytes()), "overlay.jsonld")
	if err != nil {
		t.Fatal(err)
	}
	if g2.Len() != g.Len() {
		t.Errorf("read back %d nodes, wrote %d", g2.Len(), g.Len())
	}
	// an incomplete snapshot is refused
	data, _ := os.ReadFile(filepath.Join(fixtureDir, "judgments.audit.ndjson"))
	_, err = AddAuditOverlay(fixtureGraph(t), bytes.NewReader(data[:len(data)-10]), "cut")
	if exitcode.Of(err) != exitcode.Incomplete {
		t.Errorf("incomplete overlay: %v", err)
	}
}

// "witness replay --what-if-policy FILE removes what that policy in
// enforcement mode would have withheld or refused and reports the
// compensation set and the verdict overlay."
func TestWhatIfPolicy(t *testing.T) {
	g := fixtureGraph(t)
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Mode = ModeGuidance // the what-if forces enforcement
	w := NewWhatIf(p, nil, "", "2026-08-30T14:33:00+00:00")
	rm, err := w.Removals(g)
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, iri := range rm {
		evs = append(evs, g.Node(iri).Value(graph.WEventID))
	}
	if strings.Join(evs, ",") != "e4,e5,e6,e7,e8" {
		t.Fatalf("removals %v", evs)
	}
	eng, err := replay.NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Counterfactual(replay.Options{Remove: rm, Sources: []replay.VerdictSource{w}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.CompensationSet) < len(rm) {
		t.Errorf("compensation set %d < removals %d", len(r.CompensationSet), len(rm))
	}
	var buf bytes.Buffer
	if err := replay.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `"source": "firewall"`) && !strings.Contains(out, `"source":"firewall"`) {
		t.Errorf("no firewall verdicts in %s", out)
	}
	if !strings.Contains(out, "withheld") || !strings.Contains(out, "allowed-sender") {
		t.Errorf("verdict overlay lacks the withheld message: %s", out)
	}
}

// replay --what-if-policy re-evaluates through the same Runner as
// evaluate (the daemon's history, not every message as certified): over
// the same messages, under the same policy, it commits the same checks,
// window for window, so its check references are evaluate's.
func TestWhatIfPolicyReEvaluatesThroughTheRunnerAsEvaluateDoes(t *testing.T) {
	g := fixtureGraph(t)
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	const ts = "2026-08-30T14:33:00+00:00"
	w := NewWhatIf(p, nil, "", ts)
	got, _, err := w.checks(g)
	if err != nil {
		t.Fatal(err)
	}
	var want []*Check
	if _, err := EvaluateFile(filepath.Join(fixtureDir, "messages.events.jsonl"), EvaluateOptions{Policy: w.Policy, Timestamp: ts,
		Each: func(c *Check) error { want = append(want, c); return nil }}); err != nil {
		t.Fatal(err)
	}
	line := func(cs []*Check) string {
		var b strings.Builder
		for _, c := range cs {
			b.WriteString(c.Input.Candidate.Event + " " + c.CheckID + " " + strings.Join(c.Input.History, ",") + "\n")
		}
		return b.String()
	}
	if line(got) != line(want) {
		t.Errorf("what-if checks differ from evaluate's:\n%s\nwant:\n%s", line(got), line(want))
	}
	refusedSend := false
	for _, c := range want {
		refusedSend = refusedSend || (c.Input.Direction == Outgoing && c.Decision.Disposition == DispositionRefused)
	}
	if !refusedSend || len(want) < 10 {
		t.Fatalf("the fixture no longer tells the daemon's windows from every message: %d checks, a refused send %v", len(want), refusedSend)
	}
}
