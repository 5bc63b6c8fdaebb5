package graph

import (
	"bytes"
	"testing"
)

// TestViewWithout: a scan filtered by ViewWithout gives, node for node,
// the graph Without gives, whatever is dropped: every node alone, every
// other node, and none.
func TestViewWithout(t *testing.T) {
	g := buildBytes(t, sampleLog(t), Options{})
	doc, err := g.JSONLD()
	if err != nil {
		t.Fatal(err)
	}
	var drops []map[string]bool
	drops = append(drops, map[string]bool{})
	every := map[string]bool{}
	for i, n := range g.Nodes {
		drops = append(drops, map[string]bool{n.ID: true})
		if i%2 == 0 {
			every[n.ID] = true
		}
	}
	drops = append(drops, every)
	touched := 0
	for _, d := range drops {
		want, err := Without(g, func(id string) bool { return d[id] }).JSONLD()
		if err != nil {
			t.Fatal(err)
		}
		var w ViewWithout
		got := &Graph{}
		err = ScanJSONLDView(bytes.NewReader(doc), "g.jsonld", func(v *NodeView) error {
			f := w.Apply(v, func(iri []byte) bool { return d[string(iri)] })
			if f != nil && f != v {
				touched++
			}
			if f != nil {
				got.Nodes = append(got.Nodes, f.Node())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		gd, err := got.JSONLD()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gd, want) {
			t.Fatalf("dropping %v: view filter and Without differ:\n%s\n%s", d, gd, want)
		}
	}
	if touched == 0 {
		t.Error("no kept node lost a reference: the filter was not exercised")
	}
}
