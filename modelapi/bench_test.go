package modelapi

import (
	"bytes"
	"fmt"
	"testing"
)

// tinyDeltas is a Chat Completions stream of n one-character deltas.
func tinyDeltas(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%d\"}}]}\n\n", i%10)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkTinyDeltas: time per event of a stream of tiny deltas (linear:
// the time per event does not grow with the stream).
func BenchmarkTinyDeltas(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		s := tinyDeltas(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				a := newAssembler(apiOpenAIChat)
				for off := 0; off < len(s); off += 4096 {
					a.Feed(s[off:min(off+4096, len(s))])
				}
				if o := a.Finish(false); len(o.Text) != n {
					b.Fatalf("text %d", len(o.Text))
				}
			}
		})
	}
}
