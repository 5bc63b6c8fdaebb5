package replay

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
)

// TestIndexWorkersEqual holds the per-node passes of viewBuilder.index
// split over several goroutines to the same passes on one: the same index
// (deeply equal) and the same outputs as NewEngine's, for a document in
// its order (sorted: the dependency arrays resolved in place) and
// reversed (the sorting path), with ranges of every size.
func TestIndexWorkersEqual(t *testing.T) {
	g, doc := synthGraph(t, 1500, 3, "workers", true)
	old, err := NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"e1", "e5", "e700", "e1499", g.Nodes[len(g.Nodes)/3].ID, g.Nodes[len(g.Nodes)-1].ID}
	want := render(t, old, queries)
	// copies of the document's nodes, in its order
	var views viewBatch
	err = graph.ScanJSONLDView(bytes.NewReader(doc), "g.jsonld", func(v *graph.NodeView) error {
		views.add(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(views.views)
	slices.Reverse(reversed)
	for order, vs := range map[string][]graph.NodeView{"document": views.views, "reversed": reversed} {
		var first *index
		for _, workers := range []int{1, 2, 3, 8, 64} {
			vb := viewBuilder{names: newNameTable(16), tools: map[string]int32{}, workers: workers}
			for i := range vs {
				vb.add(&vs[i])
			}
			ix, ev, err := vb.index()
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s order, %d workers", order, workers)
			if got := render(t, &Engine{ix: ix, events: ev}, queries); got != want {
				t.Errorf("%s: outputs differ from NewEngine's", name)
			}
			if first == nil {
				first = ix
			} else if !reflect.DeepEqual(ix, first) {
				t.Errorf("%s: index differs from one worker's", name)
			}
		}
	}
}
