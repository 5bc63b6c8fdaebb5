package verify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// benchLog builds a signed log of n events: read_file calls under the scope
// and their responses.
func benchLog(b *testing.B, n int) []byte {
	plan := testPlan()
	var evs []*eventlog.Event
	for i := 0; len(evs) < n; i++ {
		call := ev(eventlog.KindToolCall, "read_file", fmt.Sprint(i), map[string]any{"path": fmt.Sprintf("/data/f%d.txt", i)})
		evs = append(evs, call)
		resp := ev(eventlog.KindToolResponse, "read_file", fmt.Sprint(i), map[string]any{"content": []any{map[string]any{"type": "text", "text": "x"}}})
		resp.Call = eventlog.EventID(int64(len(evs)))
		evs = append(evs, resp)
	}
	return buildLog(b, plan, logSpec{events: evs, signer: testKey})
}

var benchSizes = []struct {
	name string
	n    int
}{{"10k", 10000}, {"100k", 100000}}

// BenchmarkVerifyEvents measures verify over an event log as the CLI runs it
// (the chain pass, the seal checks and the graph digest, in step over one
// read): events per second at 10k and 100k events.
func BenchmarkVerifyEvents(b *testing.B) {
	plan := testPlan()
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			data := benchLog(b, sz.n)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := &Report{}
				opts := signedOpts()
				opts.GraphDigest = true
				if err := checkEvents(r, plan, "events.jsonl", bytes.NewReader(data), opts); err != nil {
					b.Fatal(err)
				}
				r.Finish()
				if r.Verdict != verified {
					b.Fatalf("verdict %s", r.Verdict)
				}
			}
			b.ReportMetric(float64(sz.n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkVerifyFloor is the floor for BenchmarkVerifyEvents: reading the
// same bytes line by line and hashing each line, nothing else.
func BenchmarkVerifyFloor(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			data := benchLog(b, sz.n)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sc := bufio.NewScanner(bytes.NewReader(data))
				sc.Buffer(make([]byte, 64<<10), 64<<20)
				for sc.Scan() {
					sha256.Sum256(sc.Bytes())
				}
			}
			b.ReportMetric(float64(sz.n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
