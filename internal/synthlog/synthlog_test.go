package synthlog

import (
	"bytes"
	"io"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

func TestGenerateDeterministicAndValid(t *testing.T) {
	var a, b bytes.Buffer
	if err := Generate(&a, 500, 3, "s"); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&b, 500, 3, "s"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed gave different bytes")
	}
	r := eventlog.NewReader(&a, "synthetic")
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 500 {
		t.Fatalf("got %d events, want 500", n)
	}
}

// The graph-sized shape: deterministic, and what it yields directly is what
// it writes through eventlog.Writer (same kinds, ids and links).
func TestGraphDeterministicAndValid(t *testing.T) {
	var a, b bytes.Buffer
	if err := WriteGraph(&a, 2000); err != nil {
		t.Fatal(err)
	}
	if err := WriteGraph(&b, 2000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs gave different bytes")
	}
	r := eventlog.NewReader(&a, "graph")
	src := NewGraph(2000)
	n := 0
	for {
		got, err := r.Next()
		want, werr := src.Next()
		if err == io.EOF || werr == io.EOF {
			if err != werr {
				t.Fatalf("event %d: written log ends %v, source ends %v", n, err, werr)
			}
			break
		}
		if err != nil || werr != nil {
			t.Fatal(err, werr)
		}
		if got.ID != want.ID || got.Kind != want.Kind || got.Call != want.Call || got.Cause != want.Cause || got.Input != want.Input {
			t.Fatalf("event %d: written %+v, yielded %+v", n, got, want)
		}
		n++
	}
	if n < 500 {
		t.Fatalf("only %d events", n)
	}
}
