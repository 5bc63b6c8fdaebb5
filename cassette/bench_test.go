package cassette

import (
	"io"
	"testing"
)

func BenchmarkRecord(b *testing.B) {
	line := []byte(`{"result":{"content":[{"type":"text","text":"Echo: hello world"}]},"jsonrpc":"2.0","id":42}`)
	w, err := NewWriter(io.Discard, Header{Command: "x", Frozen: true})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		if _, err := w.Record(S2C, line, false); err != nil {
			b.Fatal(err)
		}
	}
}
