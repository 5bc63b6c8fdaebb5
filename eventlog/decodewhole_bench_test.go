package eventlog_test

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// BenchmarkDecodeEventFastWhole: DecodeEventFastWhole over the lines with
// a wire member of the logs that have them (wholeFixtures).
func BenchmarkDecodeEventFastWhole(b *testing.B) {
	var lines [][]byte
	var size int64
	for _, l := range wholeFixtures(b) {
		for _, line := range bytes.Split(l, []byte("\n")) {
			if bytes.Contains(line, []byte(`"wire":{`)) {
				lines = append(lines, line)
				size += int64(len(line))
			}
		}
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, line := range lines {
			if _, err := eventlog.DecodeEventFastWhole(line); err != nil {
				b.Fatal(err)
			}
		}
	}
}
