//go:build unix

package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/synthlog"
)

// BenchmarkReadFirst is the report's first pass over a generated log of
// 100,000 events (the bench's generator). cpu-ns/op is the process's CPU
// time (user+sys, the collector's too) per pass: on a shared machine the
// wall time (ns/op) says little.
func BenchmarkReadFirst(b *testing.B) {
	p := filepath.Join(b.TempDir(), "events.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := synthlog.Generate(f, 100000, 1, "bench-100000"); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	o := Options{MaxDetails: DefaultMaxDetails}
	cpu0 := cpuTime(b)
	for b.Loop() {
		fp := readFirst(p, o, newInterner(), newInterner())
		if fp.rerr != nil || fp.openErr != nil || len(fp.codes) != 100000 {
			b.Fatalf("first pass: %v %v, %d events", fp.rerr, fp.openErr, len(fp.codes))
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+sys time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
