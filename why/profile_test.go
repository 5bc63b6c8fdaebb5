package why

import (
	"os"
	"testing"
)

// TestProfileGraph runs ExplainJSONLD on the graph named by
// $WITNESS_WHY_PROFILE_GRAPH for the node $WITNESS_WHY_PROFILE_NODE (e5
// without it), skipped without the graph, so that `go test -run
// TestProfileGraph -cpuprofile` profiles `witness why --graph G NODE`
// (docs/design/scale.md).
func TestProfileGraph(t *testing.T) {
	g := os.Getenv("WITNESS_WHY_PROFILE_GRAPH")
	if g == "" {
		t.Skip("set WITNESS_WHY_PROFILE_GRAPH to a graph to profile why on it")
	}
	node := os.Getenv("WITNESS_WHY_PROFILE_NODE")
	if node == "" {
		node = "e5"
	}
	f, err := os.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch, err := ExplainJSONLD(f, g, node, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: %d steps, %d sources", g, node, len(ch.Chain), len(ch.Sources))
}
