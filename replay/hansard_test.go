package replay

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hansardGraph imports the 0.1.0 HANSARD log (testdata/compat/atw-0.1.0)
// and builds its graph, as 'witness import --from atw-0.1.0' then
// 'witness graph' do.
func hansardGraph(t testing.TB) *graph.Graph {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "compat", "atw-0.1.0", "hansard_scenario_1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := derive.ImportATW(bytes.NewReader(src), &log, derive.ImportOptions{Name: "hansard_scenario_1.jsonl", TS: "2026-08-30T14:33:00+00:00"}); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(eventlog.NewReader(&log, "events.jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHansardDeleteFile: removing the delete_file call removes its own
// response and nothing that did not depend on it. 0.1.0 paired responses
// LIFO, so its replay removed list_dir's response and kept delete_file's.
func TestHansardDeleteFile(t *testing.T) {
	g := hansardGraph(t)
	var del *graph.Node
	for _, n := range g.OfType(graph.WToolCall) {
		if n.Value(graph.OtelToolName) == "delete_file" {
			del = n
		}
	}
	if del == nil {
		t.Fatal("no delete_file call in the HANSARD graph")
	}
	e, err := NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Counterfactual(Options{Remove: []string{del.ID}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.CompensationSet {
		n := g.Node(m.Node)
		got = append(got, m.Kind+":"+n.Value(graph.OtelToolName))
		if m.Node != del.ID && (m.Via == nil || m.Via.On != del.ID) {
			t.Errorf("%s is in the set but does not depend on the delete_file call", m.Node)
		}
	}
	if strings.Join(got, " ") != "activity:delete_file entity:delete_file" {
		t.Fatalf("compensation set %v (%+v)", got, r.CompensationSet)
	}
	if r.Graph.Actions != 3 || r.CompensationActions != 1 || r.SynergyResidual != 0.333333 {
		t.Fatalf("actions %d removed %d residual %v", r.Graph.Actions, r.CompensationActions, r.SynergyResidual)
	}
	// The list_dir and read_file responses survive.
	for _, n := range g.OfType(graph.WResult) {
		tool := n.Value(graph.OtelToolName)
		if (tool == "delete_file") != r.removes(n.ID) {
			t.Errorf("result of %s: removed=%v", tool, r.removes(n.ID))
		}
	}
	// The log records no external effect, so none is residual or lost.
	if len(r.ResidualExternalEffects) != 0 || r.Graph.ExternalEffects != 0 {
		t.Fatalf("effects %+v", r.ResidualExternalEffects)
	}
}

func TestHansardWriteForCLI(t *testing.T) {
	out := os.Getenv("REPLAY_HANSARD_OUT")
	if out == "" {
		t.Skip("set REPLAY_HANSARD_OUT to write the HANSARD graph")
	}
	var buf bytes.Buffer
	if err := hansardGraph(t).WriteJSONLD(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
