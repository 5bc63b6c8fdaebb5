// Package memtest measures the Go heap for the bounded-memory tests: the
// live heap a value holds (Held), the peak heap while some work runs
// (Peak), and the heap in use where the work reads or writes (InUse,
// Sampler). It is the one set of such helpers (tests only); the tests
// compare what it measures with bounds and with each other, never time.
//
// The numbers are runtime.MemStats: HeapAlloc (the bytes of allocated
// objects, live or not yet collected; after a collection, the live heap)
// and HeapInuse (the bytes of the spans that hold objects). A test that
// wants the heap in use close to the live heap keeps the collector tight
// (debug.SetGCPercent with a small value) while it measures.
package memtest

import (
	"runtime"
	"sync"
	"time"
)

// Held returns the live heap that the result of build holds: HeapAlloc
// after a collection once build has returned (its result still
// reachable), less HeapAlloc after a collection before it ran; 0 when the
// heap shrank.
func Held(build func() any) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(v)
	if m1.HeapAlloc < m0.HeapAlloc {
		return 0
	}
	return m1.HeapAlloc - m0.HeapAlloc
}

// Peak runs fn after a collection and returns the largest HeapAlloc (live
// and not yet collected objects) sampled while it ran: every millisecond
// from its start, and once more when it has returned.
func Peak(fn func()) uint64 {
	runtime.GC()
	var (
		mu   sync.Mutex
		peak uint64
		wg   sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peak = max(peak, ms.HeapAlloc)
		mu.Unlock()
	}
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	sample()
	return peak
}

// InUse returns the heap in use now (HeapInuse).
func InUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// Sampler keeps the largest heap in use of the samples it is asked for,
// for a test that samples where the work calls it back (a reader's Read,
// a writer's Write, a source's Next). Its zero value is ready; it is not
// safe for concurrent use.
type Sampler struct {
	N    int    // samples taken
	Peak uint64 // the largest HeapInuse sampled
}

// Sample reads the heap in use and keeps it if it is the largest yet.
func (s *Sampler) Sample() {
	s.N++
	s.Peak = max(s.Peak, InUse())
}

// Grown returns how far now is above base, 0 when it is not.
func Grown(base, now uint64) uint64 {
	return now - min(now, base)
}
