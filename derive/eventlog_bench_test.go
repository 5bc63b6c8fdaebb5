package derive

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkImportATW imports a 0.1.0 event log of 10,000 lines.
func BenchmarkImportATW(b *testing.B) {
	var in strings.Builder
	for i := 0; i < 5000; i++ {
		tool := []string{"read_file", "list_dir", "delete_file"}[i%3]
		fmt.Fprintf(&in, `{"payload_sha256":"%064x","role":null,"seal_ref":"s","tool":"%s","ts":"2026-08-30T14:33:00+00:00","type":"tool_call","unsealed":false}`+"\n", i, tool)
		fmt.Fprintf(&in, `{"payload_sha256":"%064x","role":null,"seal_ref":"s","tool":"%s","ts":"2026-08-30T14:33:00+00:00","type":"tool_response","unsealed":false}`+"\n", i+1, tool)
	}
	data := []byte(in.String())
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ImportATW(bytes.NewReader(data), io.Discard, ImportOptions{Name: "bench", TS: frozenTS}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactLine redacts one tools/call wire line with a path and a
// regular expression rule.
func BenchmarkRedactLine(b *testing.B) {
	r := testRedactor(b, "$.arguments.token", `re:sk-[A-Za-z0-9]+`)
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"token":"abc","note":"key sk-abcdef here","path":"/data/x"}}}`)
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		if _, ch := r.Line(line); !ch {
			b.Fatal("not redacted")
		}
	}
}
