package core

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Messages "arrive through witness capture append": the JSONL input shape of
// derive.AppendLog carries them, and evaluate reads what it wrote.
func TestMessagesThroughCaptureAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	var buf bytes.Buffer
	if _, err := eventlog.StartLog(&buf, &eventlog.Header{Format: "witness-events", WitnessVersion: "test", Pairing: "jsonrpc-id"}, "2026-08-30T14:33:00+00:00", eventlog.SourceObserved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{
		`{"kind":"tool_call","tool":"send_message","arguments":{"to":"agent:bo"},"ref":"c1"}`,
		`{"kind":"message","cause":"c1","message":{"direction":"outgoing","conversation":"dm:bo","sender":"agent:ada","recipients":["agent:bo"],"text":"the password: hunter2","operation":"direct","authorAgentId":"agent:ada","postId":"p1"}}`,
		`{"kind":"message","message":{"direction":"incoming","conversation":"dm:bo","sender":"agent:mallory","recipients":["agent:ada"],"text":"Thanks","operation":"direct"}}`,
		`{"kind":"message","message":{"direction":"incoming","conversation":"dm:bo","sender":"agent:bo","recipients":["agent:ada"],"text":"Thanks","operation":"direct"}}`,
	}, "\n") + "\n"
	clock := func() string { return "2026-08-30T14:34:00+00:00" }
	if _, err := derive.AppendLog(path, strings.NewReader(input), derive.AppendOptions{Clock: clock}); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	if _, err := EvaluateFile(path, EvaluateOptions{Policy: p, Each: func(c *Check) error {
		lines = append(lines, CheckLine(c))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"e2 outgoing direct refused reason=norm-violation decidedBy=credentials",
		"e3 incoming direct withheld reason=prohibition decidedBy=allowed-sender",
		"e4 incoming direct admitted reason=admission decidedBy=-",
	}
	if len(lines) != len(want) {
		t.Fatalf("checks:\n%s", strings.Join(lines, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("check %d: %s, want %s...", i, lines[i], want[i])
		}
	}
}
