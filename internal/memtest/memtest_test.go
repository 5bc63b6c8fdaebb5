package memtest

import (
	"runtime"
	"runtime/debug"
	"testing"
)

const block = 32 << 20

// near is the least a measure of the block may be: the rest of the heap
// moves a little between two readings (spans swept, the runtime's own
// objects), so a measure of the block is the block give or take that.
const near = block - block/16

// sink keeps a block reachable from outside the function that made it.
var sink []byte

func fill(b []byte) []byte {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// TestHeld: a kept block is counted, a dropped one is not.
func TestHeld(t *testing.T) {
	kept := Held(func() any { return fill(make([]byte, block)) })
	if kept < near || kept > 2*block {
		t.Errorf("a kept %d MiB block: held %d KiB", block>>20, kept>>10)
	}
	dropped := Held(func() any { return len(fill(make([]byte, block))) })
	if dropped > block/8 {
		t.Errorf("a dropped %d MiB block: held %d KiB", block>>20, dropped>>10)
	}
}

// TestPeak: a block made while fn runs is in the peak, even when fn
// returns before a tick; with no block the peak stays below it.
func TestPeak(t *testing.T) {
	defer func() { sink = nil }()
	with := Peak(func() { sink = fill(make([]byte, block)) })
	if with < block {
		t.Errorf("a %d MiB block: peak %d KiB", block>>20, with>>10)
	}
	sink = nil
	without := Peak(func() {})
	if without >= block {
		t.Errorf("no block: peak %d KiB, the block %d KiB", without>>10, block>>10)
	}
}

// TestPeakInUse: as TestPeak, for the heap in use.
func TestPeakInUse(t *testing.T) {
	defer func() { sink = nil }()
	base := InUse()
	with := PeakInUse(func() { sink = fill(make([]byte, block)) })
	if with < block {
		t.Errorf("a %d MiB block: peak in use %d KiB", block>>20, with>>10)
	}
	sink = nil
	runtime.GC()
	without := PeakInUse(func() {})
	if g := Grown(base, without); g >= near {
		t.Errorf("no block: peak in use %d KiB above the start", g>>10)
	}
}

// TestLive: a block kept is in the live heap, then not once dropped.
func TestLive(t *testing.T) {
	defer func() { sink = nil }()
	base := Live()
	sink = fill(make([]byte, block))
	if g := Grown(base, Live()); g < near {
		t.Errorf("a kept %d MiB block: the live heap grew by %d KiB", block>>20, g>>10)
	}
	sink = nil
	if g := Grown(base, Live()); g >= block/8 {
		t.Errorf("the block dropped: the live heap still %d KiB above the start", g>>10)
	}
}

// TestAllocated: a block allocated and dropped still counts.
func TestAllocated(t *testing.T) {
	base := Allocated()
	n := len(fill(make([]byte, block)))
	runtime.GC()
	if g := Grown(base, Allocated()); g < uint64(n) {
		t.Errorf("a %d MiB block allocated: %d KiB counted", block>>20, g>>10)
	}
}

// TestSampler: the peak of the samples is the largest heap in use seen,
// and Grown measures from a base.
func TestSampler(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	defer func() { sink = nil }()
	runtime.GC()
	base := InUse()
	var s Sampler
	s.Sample()
	sink = fill(make([]byte, block))
	s.Sample()
	sink = nil
	runtime.GC()
	s.Sample()
	if s.N != 3 {
		t.Errorf("%d samples, want 3", s.N)
	}
	if g := Grown(base, s.Peak); g < near {
		t.Errorf("a %d MiB block: the samples grew by %d KiB", block>>20, g>>10)
	}
	if g := Grown(base, InUse()); g >= block {
		t.Errorf("the block collected: still %d KiB above the base", g>>10)
	}
	if Grown(10, 3) != 0 || Grown(3, 10) != 7 {
		t.Errorf("Grown(10, 3) = %d, Grown(3, 10) = %d", Grown(10, 3), Grown(3, 10))
	}
}
