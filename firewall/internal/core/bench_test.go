package core

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// BenchmarkEvaluate measures evaluating the code rules over a log of n
// messages in 20 conversations with the audit snapshot written; it reports
// messages per second.
func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			p := mustPolicy(b, pol("enforcement", codeIn, codeOut, ""))
			var msgs []eventlog.Message
			for i := 0; i < n; i++ {
				conv := fmt.Sprintf("c%d", i%20)
				if i%2 == 0 {
					msgs = append(msgs, in(conv, "agent:peer", fmt.Sprintf("question %d: can you check the build?", i)))
				} else {
					msgs = append(msgs, out(conv, fmt.Sprintf("answer %d: the build is green, the password is set", i)))
				}
			}
			log := logOf(b, msgs...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var audit bytes.Buffer
				if _, err := Evaluate(bytes.NewReader(log), "bench", "d", EvaluateOptions{Policy: p, LocalAgent: "agent:me", Audit: &audit}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkEvaluateFloor is the floor under BenchmarkEvaluate: reading and
// decoding the same log's message events, with no rule run and nothing
// written.
func BenchmarkEvaluateFloor(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			var msgs []eventlog.Message
			for i := 0; i < n; i++ {
				msgs = append(msgs, in(fmt.Sprintf("c%d", i%20), "agent:peer", fmt.Sprintf("question %d: can you check the build?", i)))
			}
			log := logOf(b, msgs...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				count := 0
				if err := ForEachMessage(bytes.NewReader(log), "bench", nil, func(Candidate) error { count++; return nil }); err != nil || count != n {
					b.Fatal(err, count)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkVerifyAudit measures audit verification throughput.
func BenchmarkVerifyAudit(b *testing.B) {
	data := sampleAudit(b)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if v, err := VerifyAudit(bytes.NewReader(data), "bench", nil); err != nil || !v.Complete {
			b.Fatal(v, err)
		}
	}
}
