package graph

import (
	"bytes"
	"io"
	"testing"
)

func benchLog(b *testing.B, n int) []byte {
	b.Helper()
	return synthetic(b, n, 1)
}

// BenchmarkStreamNQuads10k: streamed canonical N-Quads of a 10k-event log.
func BenchmarkStreamNQuads10k(b *testing.B) {
	log := benchLog(b, 10000)
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := StreamNQuads(NewEventSource(bytes.NewReader(log), "bench"), io.Discard, Options{}, StreamOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBuildJSONLD10k: in-memory graph and its JSON-LD document.
func BenchmarkBuildJSONLD10k(b *testing.B) {
	log := benchLog(b, 10000)
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := Build(NewEventSource(bytes.NewReader(log), "bench"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.WriteJSONLD(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeEventFast10k: the fast event decoder alone.
func BenchmarkDecodeEventFast10k(b *testing.B) {
	log := benchLog(b, 10000)
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src := NewEventSource(bytes.NewReader(log), "bench")
		for {
			if _, err := src.Next(); err != nil {
				if err == io.EOF {
					break
				}
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "events/s")
}
