package graph

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// digestGraph is a graph whose IRIs chain as prefixes ("e1" before "e1/a"
// before "e10") across any batch boundary, with escaped, typed and
// repeated literals, types and references.
func digestGraph(t testing.TB, n int) *Graph {
	t.Helper()
	g := New()
	add := func(s, p string, o Term) {
		if err := g.Add(s, p, o); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		s := fmt.Sprintf("urn:t:e%d", i)
		n := g.mustEnsure(t, s)
		n.Types = append(n.Types, WToolCall)
		add(s, WSeq, Term{Lex: fmt.Sprint(i), Datatype: XSDInteger})
		add(s, ProvValue, Term{Lex: fmt.Sprintf("line\n\"%d\"\t\\é", i)})
		add(s, ProvUsed, Ref(s+"/a"))
		add(s+"/a", ProvValue, Term{Lex: `{"k":1}`})
		if i%7 == 0 {
			add(s+"/a/b", WRole, Term{Lex: "user"})
		}
		if i > 0 {
			add(s, ProvUsed, Ref(fmt.Sprintf("urn:t:e%d", i-1)))
		}
	}
	g.mustEnsure(t, "urn:t:empty")
	return g
}

func (g *Graph) mustEnsure(t testing.TB, id string) *Node {
	n, err := g.ensure(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The digest is WriteNQuads' whatever the batches: one node a batch, a
// few, a few bytes, the default; from nodes and from a scan's views.
func TestNQuadsDigestBatches(t *testing.T) {
	g := digestGraph(t, 300)
	want, err := g.WriteNQuads(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var doc bytes.Buffer
	if err := g.WriteJSONLD(&doc); err != nil {
		t.Fatal(err)
	}
	for _, lim := range []struct{ bytes, nodes int }{{1 << 30, 1}, {1 << 30, 3}, {64, 1 << 30}, {digestBatchBytes, digestBatchNodes}} {
		d := NewNQuadsDigest()
		d.maxBytes, d.maxNodes = lim.bytes, lim.nodes
		for _, n := range g.Nodes {
			if err := d.Add(n); err != nil {
				t.Fatal(err)
			}
		}
		got, err := d.Sum()
		if err != nil || got != want {
			t.Errorf("%v: digest %s (%v), want %s", lim, got, err, want)
		}
		if d.flight != nil {
			t.Errorf("%v: a batch in flight after Sum", lim)
		}
		d = NewNQuadsDigest()
		d.maxBytes, d.maxNodes = lim.bytes, lim.nodes
		if err := ScanJSONLDView(bytes.NewReader(doc.Bytes()), "g", d.AddView); err != nil {
			t.Fatal(err)
		}
		if got, err = d.Sum(); err != nil || got != want {
			t.Errorf("%v: digest of the views %s (%v), want %s", lim, got, err, want)
		}
	}
	// a changed literal changes the digest
	d := NewNQuadsDigest()
	d.maxNodes = 2
	for i, n := range g.Nodes {
		if i == 100 {
			c := *n
			c.Props = map[string][]Term{ProvValue: {{Lex: "changed"}}}
			n = &c
		}
		if err := d.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := d.Sum(); got == want {
		t.Error("a changed node gives the same digest")
	}
}

// Out of order, after Sum, after Close: refused; Close leaves nothing in
// flight and Sum after Close is an error.
func TestNQuadsDigestClose(t *testing.T) {
	g := digestGraph(t, 50)
	d := NewNQuadsDigest()
	d.maxNodes = 1
	for _, n := range g.Nodes[:20] {
		if err := d.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Add(g.Nodes[3]); err == nil {
		t.Error("a node out of order is taken")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d.flight != nil {
		t.Error("a batch in flight after Close")
	}
	if err := d.Add(g.Nodes[30]); err == nil {
		t.Error("a node taken after Close")
	}
	if _, err := d.Sum(); err == nil {
		t.Error("Sum after Close gives a digest")
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close twice: %v", err)
	}
	d = NewNQuadsDigest()
	if _, err := d.Sum(); err != nil {
		t.Fatal(err)
	}
	if err := d.Add(g.Nodes[0]); err == nil {
		t.Error("a node taken after Sum")
	}
}

// FuzzNQuadsDigest: for any document ReadJSONLD takes, the digest of its
// scan's views, in batches of any size, is WriteNQuads'.
func FuzzNQuadsDigest(f *testing.F) {
	var doc bytes.Buffer
	if err := digestGraph(f, 5).WriteJSONLD(&doc); err != nil {
		f.Fatal(err)
	}
	f.Add(doc.Bytes(), uint8(1))
	// CI's find: a node renamed out of IRI order in a streamed document.
	f.Add(bytes.Replace(doc.Bytes(), []byte(`"urn:t:e0/a/b"`), []byte(`"ueeet:e0/a/b"`), 1), uint8(2))
	f.Add([]byte(`{"@context":{},"@graph":[{"@id":"urn:a","urn:p":"x"}]}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, per uint8) {
		g, err := ReadJSONLD(bytes.NewReader(data), "f")
		if err != nil {
			return
		}
		want, err := g.WriteNQuads(io.Discard)
		if err != nil {
			return
		}
		// The scan gives a streamed document's nodes in document order;
		// ReadJSONLD sorts them. The digest takes nodes in IRI order only,
		// so a document whose nodes are not strictly in IRI order must be
		// refused by the digest (its callers reread it whole), never
		// digested into another sum.
		sorted, any, prev := true, false, ""
		if err := ScanJSONLDView(bytes.NewReader(data), "f", func(v *NodeView) error {
			if any && string(v.ID) <= prev {
				sorted = false
			}
			any, prev = true, string(v.ID)
			return nil
		}); err != nil {
			t.Fatalf("the scan refuses what ReadJSONLD reads: %v", err)
		}
		d := NewNQuadsDigest()
		d.maxNodes = int(per) + 1
		err = ScanJSONLDView(bytes.NewReader(data), "f", d.AddView)
		if !sorted {
			if err == nil || !strings.Contains(err.Error(), "in IRI order") {
				t.Fatalf("a document out of IRI order: digest error %v, want a refusal", err)
			}
			d.Close()
			return
		}
		if err != nil {
			t.Fatalf("the digest refuses a sorted document: %v", err)
		}
		if got, err := d.Sum(); err != nil || got != want {
			t.Fatalf("digest %s (%v), want %s", got, err, want)
		}
	})
}
