package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// writeFixtureGraph builds the graph of the bundled firewall message events
// and writes it as JSON-LD in dir.
func writeFixtureGraph(t *testing.T, dir string) string {
	t.Helper()
	root := testrepo.Root(t)
	f, err := os.Open(filepath.Join(root, "testdata", "firewall", "messages.events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := graph.Build(eventlog.NewReader(f, "messages.events.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := g.WriteJSONLD(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "graph.jsonld")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// witness replay --what-if-policy: the messages the policy would have
// withheld or refused are removed; its verdicts are in the overlay.
func TestReplayWhatIfPolicy(t *testing.T) {
	dir := t.TempDir()
	gpath := writeFixtureGraph(t, dir)
	root := testrepo.Root(t)
	policy := filepath.Join(root, "testdata", "firewall", "policy-code.json")
	var out, errb bytes.Buffer
	env := map[string]string{"ATW_WITNESS_TS": "2026-08-30T14:33:00+00:00"}
	a := newApp(strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	code := run([]string{"replay", "--graph", gpath, "--what-if-policy", policy, "--format", "json"}, a)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"/message/e4", "/message/e8", `"source":"firewall"`, `"verdict":"withheld"`, `"rule":"allowed-sender"`, `"verdict":"refused"`, `"rule":"credentials"`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	// a policy that would withhold nothing: nothing to replay, exit 0
	lax := filepath.Join(dir, "lax.json")
	if err := os.WriteFile(lax, []byte(`{"format":"org.social-harness/message-policy/v1","mode":"enforcement"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"replay", "--graph", gpath, "--what-if-policy", lax}, a); code != 0 || !strings.Contains(out.String(), "nothing to replay") {
		t.Errorf("lax policy: exit %d, %q", code, out.String())
	}
	// a bad policy is a usage error
	if code := run([]string{"replay", "--graph", gpath, "--what-if-policy", filepath.Join(dir, "missing.json")}, a); code != 2 {
		t.Errorf("missing policy: exit %d", code)
	}
}
