// Package memtest measures the Go heap for the bounded-memory tests: the
// live heap a value holds (Held), the peak heap while some work runs
// (Peak, PeakInUse), the live heap and the heap in use where the work
// reads or writes (Live, InUse, Sampler), and what it allocated
// (Allocated). It is the one set of such helpers (tests only); the tests
// compare what it measures with bounds and with each other, never time.
//
// The numbers are runtime.MemStats: HeapAlloc (the bytes of allocated
// objects, live or not yet collected; after a collection, the live heap),
// HeapInuse (the bytes of the spans that hold objects) and TotalAlloc
// (the bytes allocated so far). A test that wants the heap in use close to
// the live heap keeps the collector tight (debug.SetGCPercent with a small
// value) while it measures.
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
	before := Live()
	v := build()
	after := Live()
	runtime.KeepAlive(v)
	return Grown(before, after)
}

// Live returns the live heap now: HeapAlloc after a collection. A test
// calls it where the work calls it back (a writer's first Write) to take
// the live heap at that point.
func Live() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Peak runs fn after a collection and returns the largest HeapAlloc (live
// and not yet collected objects) sampled while it ran: every millisecond
// from its start, and once more when it has returned.
func Peak(fn func()) uint64 {
	return peak(fn, func(ms *runtime.MemStats) uint64 { return ms.HeapAlloc })
}

// PeakInUse is Peak for the heap in use: the largest HeapInuse sampled
// while fn ran. fn must return (a t.Fatal in it would leave the sampler
// running): a test keeps its errors and checks them after.
func PeakInUse(fn func()) uint64 {
	return peak(fn, func(ms *runtime.MemStats) uint64 { return ms.HeapInuse })
}

// peak runs fn after a collection and returns the largest of what of
// samples, every millisecond while fn runs and once after.
func peak(fn func(), of func(*runtime.MemStats) uint64) uint64 {
	runtime.GC()
	var (
		mu  sync.Mutex
		top uint64
		wg  sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		top = max(top, of(&ms))
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
	return top
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

// Allocated returns the bytes allocated so far (TotalAlloc: cumulative,
// freed objects count too), for a test that bounds what some work
// allocates rather than what it holds.
func Allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// Grown returns how far now is above base, 0 when it is not.
func Grown(base, now uint64) uint64 {
	return now - min(now, base)
}
