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
