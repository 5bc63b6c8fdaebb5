package verify

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agent-trace-witness/witness/capture"
)

// BenchmarkCheckEvents measures verify's two streaming passes (chain, then
// checks) over a 10,000-event log; it reports events per second.
func BenchmarkCheckEvents(b *testing.B) {
	plan := testPlan()
	var evs []*capture.Event
	for i := 0; len(evs) < 10000; i++ {
		call := ev(capture.KindToolCall, "read_file", fmt.Sprint(i), map[string]any{"path": fmt.Sprintf("/data/f%d.txt", i)})
		evs = append(evs, call)
		resp := ev(capture.KindToolResponse, "read_file", fmt.Sprint(i), map[string]any{"content": []any{map[string]any{"type": "text", "text": "x"}}})
		resp.Call = capture.EventID(int64(len(evs)))
		evs = append(evs, resp)
	}
	data := buildLog(b, plan, logSpec{events: evs, signer: testKey})
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &Report{}
		if err := CheckEvents(r, plan, "events.jsonl", bytes.NewReader(data), signedOpts()); err != nil {
			b.Fatal(err)
		}
		r.Finish()
		if r.Verdict != Verified {
			b.Fatalf("verdict %s", r.Verdict)
		}
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
