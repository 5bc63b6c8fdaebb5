package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func TestPolicyDefaults(t *testing.T) {
	// "incoming, outgoing: no, default []"; "maximumHistoryRecords (default
	// 256, range 1–1024)"; "default probability 0.5, 384,000 request bytes,
	// 15 s"; "default 150 s per check, 70 s per middleware, 512,000 input
	// bytes, 2,000,000 result bytes"; "facts: no, default []"
	p := mustPolicy(t, `{"format":"org.social-harness/message-policy/v1","mode":"guidance"}`)
	if len(p.Incoming) != 0 || len(p.Outgoing) != 0 || len(p.Facts) != 0 || p.English != nil || p.DecisionProvider != nil {
		t.Errorf("defaults %+v", p)
	}
	if p.MaximumHistoryRecords != 256 || p.MaximumConcurrentChecks != DefaultMaximumConcurrentChecks {
		t.Errorf("history %d concurrent %d", p.MaximumHistoryRecords, p.MaximumConcurrentChecks)
	}
	if p.EnglishSettings != (EnglishSettings{0.5, 384000, 15000}) {
		t.Errorf("englishSettings %+v", p.EnglishSettings)
	}
	if p.Settings != (Settings{150000, 70000, 512000, 2000000}) {
		t.Errorf("settings %+v", p.Settings)
	}
	// english present: fixedRules and initialRules default to []
	p = mustPolicy(t, `{"format":"org.social-harness/message-policy/v1","mode":"guidance","english":{},"decisionProvider":{"kind":"unavailable"}}`)
	if p.English == nil || p.English.FixedRules == nil || p.English.InitialRules == nil {
		t.Errorf("english defaults %+v", p.English)
	}
}

// The seed's own example document decodes.
func TestPolicySeedExample(t *testing.T) {
	p := mustPolicy(t, `{
  "format": "org.social-harness/message-policy/v1",
  "mode": "enforcement",
  "incoming": [{ "use": "acknowledgements" }],
  "outgoing": [{ "use": "credentials" }, { "use": "plain-language", "toolNames": ["policy_read"] }],
  "english": { "fixedRules": [], "initialRules": [] },
  "decisionProvider": { "kind": "jev", "model": "jev-1.13.0" },
  "maximumConcurrentChecks": 2
}`)
	if p.Mode != ModeEnforcement || len(p.Outgoing) != 2 || p.Outgoing[1].ToolNames[0] != "policy_read" || p.DecisionProvider.Model != "jev-1.13.0" || p.MaximumConcurrentChecks != 2 {
		t.Errorf("decoded %+v", p)
	}
}

func TestPolicyRefusals(t *testing.T) {
	const head = `"format":"org.social-harness/message-policy/v1","mode":"enforcement"`
	cases := []struct {
		name, doc, want string
	}{
		{"any property the format does not name is refused", `{` + head + `,"maximumHistory":3}`, `1:71: $.maximumHistory: unknown property "maximumHistory"`},
		{"unknown nested property names its JSON path", `{` + head + `,"english":{"fixedRules":[{"id":"a","kind":"safety","text":"t","severity":1}]},"decisionProvider":{"kind":"unavailable"}}`, `$.english.fixedRules[0].severity: unknown property`},
		{"unknown middleware parameter", `{` + head + `,"outgoing":[{"use":"credentials","strict":true}]}`, `$.outgoing[0].strict: unknown property`},
		{"format is required", `{"mode":"guidance"}`, `$.format: required property is missing`},
		{"format must be message-policy/v1", `{"format":"org.social-harness/message-policy/v2","mode":"guidance"}`, `$.format: unsupported format`},
		{"mode is guidance or enforcement", `{"format":"org.social-harness/message-policy/v1","mode":"shadow"}`, `$.mode: unknown mode "shadow"`},
		{"mode is required", `{"format":"org.social-harness/message-policy/v1"}`, `$.mode: required property is missing`},
		{"maximumHistoryRecords below range 1-1024", `{` + head + `,"maximumHistoryRecords":0}`, `$.maximumHistoryRecords: 0 is out of range 1-1024`},
		{"maximumHistoryRecords above range 1-1024", `{` + head + `,"maximumHistoryRecords":1025}`, `$.maximumHistoryRecords: 1025 is out of range 1-1024`},
		{"maximumHistoryRecords is an integer", `{` + head + `,"maximumHistoryRecords":2.5}`, `$.maximumHistoryRecords: expected an integer`},
		{"a norm requires a nonempty guidance template", `{` + head + `,"english":{"initialRules":[{"id":"n","kind":"norm","text":"t"}]},"decisionProvider":{"kind":"unavailable"}}`, `$.english.initialRules[0].guidance: a norm requires a non-empty guidance`},
		{"rule kind is norm, autonomy or safety", `{` + head + `,"english":{"initialRules":[{"id":"n","kind":"etiquette","text":"t"}]},"decisionProvider":{"kind":"unavailable"}}`, `$.english.initialRules[0].kind: unknown rule kind`},
		{"rule ids must be unique in the editable document", `{` + head + `,"english":{"initialRules":[{"id":"s","kind":"safety","text":"t"},{"id":"s","kind":"safety","text":"u"}]},"decisionProvider":{"kind":"unavailable"}}`, `$.english.initialRules[1].id: duplicate rule id "s"`},
		{"cannot collide with any fixed code rule id", `{` + head + `,"english":{"initialRules":[{"id":"credentials","kind":"safety","text":"t"}]},"decisionProvider":{"kind":"unavailable"}}`, `collides with a built-in code rule id`},
		{"cannot collide with any fixed English rule id", `{` + head + `,"english":{"fixedRules":[{"id":"s","kind":"safety","text":"t"}],"initialRules":[{"id":"s","kind":"safety","text":"t"}]},"decisionProvider":{"kind":"unavailable"}}`, `collides with a fixed English rule id`},
		{"decisionProvider is required with english (not-configured)", `{` + head + `,"english":{}}`, `$.decisionProvider: required with "english" or the collective norms`},
		{"decisionProvider is required with the collective norms", `{` + head + `,"incoming":[{"use":"collective-norms"}]}`, `$.decisionProvider: required`},
		{"jev names a model", `{` + head + `,"decisionProvider":{"kind":"jev"}}`, `$.decisionProvider.model: required property is missing`},
		{"unavailable takes no model", `{` + head + `,"decisionProvider":{"kind":"unavailable","model":"x"}}`, `$.decisionProvider.model: unknown property`},
		{"decisionProvider kind jev or unavailable", `{` + head + `,"decisionProvider":{"kind":"openai"}}`, `$.decisionProvider.kind: unknown decision provider kind`},
		{"a built-in middleware in its own direction only", `{` + head + `,"incoming":[{"use":"credentials"}]}`, `$.incoming[0].use: middleware "credentials" is not available in the incoming direction`},
		{"unknown built-in middleware", `{` + head + `,"outgoing":[{"use":"profanity"}]}`, `$.outgoing[0].use: unknown built-in middleware`},
		{"outgoing collective norms name facilitator", `{` + head + `,"outgoing":[{"use":"collective-norms"}],"decisionProvider":{"kind":"unavailable"}}`, `$.outgoing[0].facilitator: required property is missing`},
		{"incoming collective norms take no facilitator", `{` + head + `,"incoming":[{"use":"collective-norms","facilitator":"a"}],"decisionProvider":{"kind":"unavailable"}}`, `$.incoming[0].facilitator: unknown property`},
		{"allowed-senders names agentIds", `{` + head + `,"incoming":[{"use":"allowed-senders"}]}`, `$.incoming[0].agentIds: required property is missing`},
		{"feedback nextAction is revise, wait, stop or seek-approval", `{` + head + `,"english":{"fixedRules":[{"id":"s","kind":"safety","text":"t","feedback":{"text":"x","nextAction":"retry"}}]},"decisionProvider":{"kind":"unavailable"}}`, `$.english.fixedRules[0].feedback.nextAction: unknown next action "retry"`},
		{"minimumProbability in (0,1]", `{` + head + `,"englishSettings":{"minimumProbability":1.5}}`, `$.englishSettings.minimumProbability: 1.5 is out of range`},
		{"duplicate JSON property", `{` + head + `,"mode":"guidance"}`, `policy.json:1:71: $.mode: duplicate key "mode"`},
		{"invalid JSON names line and column", "{\n  \"format\": \"org.social-harness/message-policy/v1\",\n  \"mode\": enforcement\n}", `policy.json:3:`},
		{"same middleware twice in one chain", `{` + head + `,"outgoing":[{"use":"credentials"},{"use":"credentials"}]}`, `$.outgoing[1].use: middleware "credentials" is already installed`},
		{"document is an object", `[]`, `$: expected an object`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePolicy([]byte(tc.doc), "policy.json")
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "policy.json") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %v", exitcode.Of(err))
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Line == 0 {
				t.Errorf("no line/column in %#v", err)
			}
		})
	}
}

func TestPolicyAtMostOneMiB(t *testing.T) {
	// "a JSON document of at most 1 MiB"
	doc := `{"format":"org.social-harness/message-policy/v1","mode":"guidance","facts":["` + strings.Repeat("f", MaxPolicyBytes) + `"]}`
	_, err := DecodePolicy([]byte(doc), "big.json")
	if err == nil || !strings.Contains(err.Error(), "exceeds 1048576 bytes") {
		t.Fatalf("err %v", err)
	}
	// exactly at the limit is fine
	base := `{"format":"org.social-harness/message-policy/v1","mode":"guidance","facts":[""]}`
	pad := MaxPolicyBytes - len(base)
	doc = `{"format":"org.social-harness/message-policy/v1","mode":"guidance","facts":["` + strings.Repeat("f", pad) + `"]}`
	if len(doc) != MaxPolicyBytes {
		t.Fatalf("doc is %d bytes", len(doc))
	}
	if _, err := DecodePolicy([]byte(doc), "max.json"); err != nil {
		t.Fatalf("1 MiB document refused: %v", err)
	}
}

// "Identical installations across restarts have the same revision"
func TestActiveRevision(t *testing.T) {
	a := mustPolicy(t, `{"format":"org.social-harness/message-policy/v1","mode":"enforcement","outgoing":[{"use":"credentials"}]}`)
	b := mustPolicy(t, "{\n \"outgoing\" : [ {\"use\":\"credentials\"} ],\n \"mode\":\"enforcement\", \"incoming\": [], \"maximumHistoryRecords\": 256,\n \"format\":\"org.social-harness/message-policy/v1\"}")
	c := mustPolicy(t, `{"format":"org.social-harness/message-policy/v1","mode":"guidance","outgoing":[{"use":"credentials"}]}`)
	d := mustPolicy(t, `{"format":"org.social-harness/message-policy/v1","mode":"enforcement","outgoing":[{"use":"credentials"}],"maximumHistoryRecords":255}`)
	ra, _ := a.ActiveRevision()
	rb, _ := b.ActiveRevision()
	rc, _ := c.ActiveRevision()
	rd, _ := d.ActiveRevision()
	if ra != rb {
		t.Errorf("identical installations differ: %s %s", ra, rb)
	}
	if ra == rc || ra == rd {
		t.Errorf("different installations share a revision")
	}
	if len(ra) != 64 || strings.ToLower(ra) != ra {
		t.Errorf("revision %q", ra)
	}
}
