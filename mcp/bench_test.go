package mcp

import (
	"bytes"
	"strings"
	"testing"
)

var benchLine = []byte(`{"result":{"content":[{"type":"text","text":"Echo: hello world"}],"structuredContent":{"x":1.0}},"jsonrpc":"2.0","id":42}`)

func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchLine)))
	for i := 0; i < b.N; i++ {
		if _, err := Parse(benchLine); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLineReader(b *testing.B) {
	data := []byte(strings.Repeat(string(benchLine)+"\n", 1000))
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		lr := NewLineReader(bytes.NewReader(data), 0)
		for {
			if _, err := lr.Next(); err != nil {
				break
			}
		}
	}
}
