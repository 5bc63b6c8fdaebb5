package canon

import (
	"fmt"
	"strings"
	"testing"
)

func benchDoc(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"scopes":["read:/data/%d/**","write:/tmp/%d"],"name":"tool_%d","definition":{"description":"é€ <tool> %d","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}`, i, i, i, i)
	}
	b.WriteString(`],"witness_id":"w","created_at":"2026-08-30T14:33:00+00:00","n":[1.5,2e-7,12345]}`)
	return []byte(b.String())
}

// BenchmarkTransform measures canonicalization throughput (bytes/s) of a
// seal-like document with 100 tool definitions.
func BenchmarkTransform(b *testing.B) {
	doc := benchDoc(100)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Transform(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransformReference is the encoding/json-token-based reference
// implementation on the same document, for comparison.
func BenchmarkTransformReference(b *testing.B) {
	doc := benchDoc(100)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := transformRef(doc); err != nil {
			b.Fatal(err)
		}
	}
}
