package core

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// logOf writes an event log holding the given messages (in order) and
// returns its bytes.
func logOf(t testing.TB, msgs ...eventlog.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Format: "witness-events", WitnessVersion: "test", Pairing: "jsonrpc-id"}, "2026-08-30T14:33:00Z", eventlog.SourceReported)
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		m := msgs[i]
		if err := w.Append(&eventlog.Event{Kind: eventlog.KindMessage, TS: "2026-08-30T14:33:01Z", Source: eventlog.SourceReported, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func in(conv, sender, text string) eventlog.Message {
	return eventlog.Message{Direction: Incoming, Conversation: conv, Sender: sender, Recipients: []string{"agent:me"}, Text: text, Operation: "direct"}
}

func out(conv, text string, recipients ...string) eventlog.Message {
	if len(recipients) == 0 {
		recipients = []string{"agent:peer"}
	}
	return eventlog.Message{Direction: Outgoing, Conversation: conv, Sender: "agent:me", Recipients: recipients, Text: text, Operation: "direct"}
}

func mustPolicy(t testing.TB, doc string) *Policy {
	t.Helper()
	p, err := DecodePolicy([]byte(doc), "policy.json")
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return p
}

// evalAll evaluates msgs under policy and returns every check in order.
func evalAll(t testing.TB, p *Policy, prov Provider, audit *bytes.Buffer, msgs ...eventlog.Message) []*Check {
	t.Helper()
	var checks []*Check
	opts := EvaluateOptions{Policy: p, Provider: prov, LocalAgent: "agent:me", Timestamp: "2026-08-30T14:33:00+00:00",
		Each: func(c *Check) error { checks = append(checks, c); return nil }}
	if audit != nil {
		opts.Audit = audit
	}
	if _, err := Evaluate(bytes.NewReader(logOf(t, msgs...)), "events.jsonl", "digest", opts); err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return checks
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
