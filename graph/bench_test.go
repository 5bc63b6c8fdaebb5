package graph

import (
	"bytes"
	"io"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
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

// benchEvents decodes a synthetic log of n events as the streams do
// (eventlog.FastReader.ShareLines).
func benchEvents(b *testing.B, n int) []*eventlog.Event {
	b.Helper()
	fr := eventlog.NewFastReader(bytes.NewReader(benchLog(b, n)), "bench")
	fr.ShareLines(true)
	var evs []*eventlog.Event
	for {
		e, err := fr.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, e)
	}
}

// BenchmarkMapper10k: the mapper alone, as the streams run it (its
// compact lines collected in batches of decodeBatch events); allocs/op
// over 10k is the allocations per event.
func BenchmarkMapper10k(b *testing.B) {
	evs := benchEvents(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	ev := &evLines{}
	for i := 0; i < b.N; i++ {
		m := newMapper(Options{}, func(s, p string, o Term) error {
			ev.add(s, p, o)
			return nil
		})
		for j, e := range evs {
			if j%decodeBatch == 0 {
				ev.reset()
			}
			if err := m.event(e); err != nil {
				b.Fatal(err)
			}
			ev.endEvent()
		}
	}
	b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeShared10k: the fast decoder as the streams run it
// (shared lines); allocs/op over 10k is the allocations per event.
func BenchmarkDecodeShared10k(b *testing.B) {
	log := benchLog(b, 10000)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr := eventlog.NewFastReader(bytes.NewReader(log), "bench")
		fr.ShareLines(true)
		for {
			if _, err := fr.Next(); err != nil {
				if err == io.EOF {
					break
				}
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "events/s")
}
