package why_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/why"
)

const frozen = "2026-09-01T10:00:00+00:00"

func injection(t *testing.T) *graph.Run {
	t.Helper()
	model, mcp := synthlog.InjectionRun(frozen)
	r, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: model}, {Name: "fs/events.jsonl", Data: mcp}}, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExplainInjectedWrite(t *testing.T) {
	r := injection(t)
	c, err := why.Explain(r.Graph, "fs:e3", why.Options{Logs: r.Logs})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, s := range c.Chain {
		refs = append(refs, s.Ref()+" "+s.Kind)
	}
	got := strings.Join(refs, "\n")
	// the write, the turn that asked for it, its tool call, the input that
	// carried the poisoned read back, the read's result, the read...
	for _, want := range []string{"fs:e3 tool_call", "model:e4 model_turn", "model:e4#0 model_tool_call", "model:e3 model_input", "fs:e2 tool_response", "fs:e1 tool_call", "model:e1 model_input"} {
		if !strings.Contains(got, want) {
			t.Errorf("chain lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fs:e4") {
		t.Errorf("chain holds the write's own result:\n%s", got)
	}
	src := strings.Join(c.Sources, ",")
	if !strings.Contains(src, "fs:e2") || !strings.Contains(src, "model:e1") {
		t.Errorf("sources %s", src)
	}
	p, err := c.Path(graph.ResultIRI(r.Logs[1].Base, "e2"))
	if err != nil || p[0].Ref() != "fs:e3" || p[len(p)-1].Ref() != "fs:e2" {
		t.Fatalf("path %v %v", p, err)
	}
	for _, s := range c.Chain {
		if len([]rune(s.Excerpt)) > 80 {
			t.Errorf("excerpt over 80: %q", s.Excerpt)
		}
	}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil || !strings.Contains(b.String(), "overwrite /work/precious.txt") {
		t.Fatalf("text %q %v", b.String(), err)
	}
}

func TestExplainResolve(t *testing.T) {
	r := injection(t)
	for ref, code := range map[string]exitcode.Code{"e3": exitcode.Usage, "nolog:e3": exitcode.Usage, "fs:e99": exitcode.Usage} {
		if _, err := why.Explain(r.Graph, ref, why.Options{Logs: r.Logs}); exitcode.Of(err) != code {
			t.Errorf("%s: %v", ref, err)
		}
	}
	// an IRI, and logs read back from the graph itself
	if c, err := why.Explain(r.Graph, graph.CallIRI(r.Logs[1].Base, "e3"), why.Options{}); err != nil || c.Chain[0].Ref() != "fs:e3" {
		t.Fatalf("%v %v", c, err)
	}
	// one log: a bare id
	_, mcp := synthlog.InjectionRun(frozen)
	one, _ := graph.BuildRun([]graph.LogInput{{Name: "events.jsonl", Data: mcp}}, graph.Options{})
	if c, err := why.Explain(one.Graph, "e3", why.Options{}); err != nil || c.Chain[0].Event != "e3" {
		t.Fatalf("%v %v", c, err)
	}
}
