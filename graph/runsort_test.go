package graph

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
)

// oldSortRecords is the sort the runs had before runsort.go, kept as the
// reference order: slices.SortFunc by p, p2 (both keys flagged), then
// cmpKey.
func oldSortRecords(r *run, byID bool) {
	drop := int32(0)
	if byID {
		drop = 1
	}
	slices.SortFunc(r.recs, func(a, b rec) int {
		if a.ch&b.ch&1 != 0 {
			if a.p != b.p {
				if a.p < b.p {
					return -1
				}
				return 1
			}
			if a.p2 != b.p2 {
				if a.p2 < b.p2 {
					return -1
				}
				return 1
			}
		}
		return cmpKey(r.chunks[a.ch>>1][a.off:a.off+a.k-drop], r.chunks[b.ch>>1][b.off:b.off+b.k-drop], r.prefix)
	})
}

// testRun builds a run of blocks with the given keys (each a "<subject>"
// key: keyMark or '<', then the rest, then '>'), as the packer does, and a
// line after each key that tells the blocks apart.
func testRun(prefix string, byID bool, keys [][]byte) *run {
	r := &run{prefix: []byte(prefix), byID: byID}
	r.reset()
	for i, k := range keys {
		line := fmt.Appendf(nil, " <p> \"%d\" .\n", i)
		dst := r.reserve(len(k)+len(line), len(k))
		dst = append(dst, k...)
		r.setKey(dst)
		copy(dst[len(dst):len(dst)+len(line)], line) // the reserved bytes, in place
	}
	return r
}

// expandedKeys lists the sort keys of r's records in their order, keyMark
// expanded to the prefix.
func expandedKeys(r *run, byID bool) []string {
	drop := int32(0)
	if byID {
		drop = 1
	}
	out := make([]string, len(r.recs))
	for i := range r.recs {
		k := r.sortKeyOf(&r.recs[i], drop)
		if len(k) > 0 && k[0] == keyMark {
			out[i] = string(r.prefix) + string(k[1:])
		} else {
			out[i] = string(k)
		}
	}
	return out
}

// blocksOf lists r's blocks, sorted: the records are a permutation.
func blocksOf(r *run) []string {
	out := make([]string, len(r.recs))
	for i := range r.recs {
		out[i] = string(r.block(i))
	}
	slices.Sort(out)
	return out
}

// checkSameOrder sorts two copies of a run of keys, the old way and the
// new, and compares the order of their sort keys.
func checkSameOrder(t *testing.T, prefix string, byID bool, keys [][]byte) {
	t.Helper()
	old, cur := testRun(prefix, byID, keys), testRun(prefix, byID, keys)
	oldSortRecords(old, byID)
	cur.sortRecords(byID)
	want, got := expandedKeys(old, byID), expandedKeys(cur, byID)
	if !slices.Equal(want, got) {
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("byID %v, %d keys: record %d is %q, want %q", byID, len(keys), i, got[i], want[i])
			}
		}
	}
	if !slices.Equal(blocksOf(old), blocksOf(cur)) {
		t.Fatalf("byID %v, %d keys: the sorted records are not the run's blocks", byID, len(keys))
	}
	// blocks of one subject must be adjacent (memIter merges them)
	seen := map[string]bool{}
	for i := range cur.recs {
		k := string(cur.sortKeyOf(&cur.recs[i], 0))
		if i > 0 && k == string(cur.sortKeyOf(&cur.recs[i-1], 0)) {
			continue
		}
		if seen[k] {
			t.Fatalf("byID %v: the blocks of %q are not adjacent", byID, k)
		}
		seen[k] = true
	}
}

const testPrefix = "<urn:witness:s/"

// randomKey returns a key of the shapes runs hold: mostly flagged
// (kind/eN, kind/eN/assoc), rests shorter and longer than 16 bytes,
// shared 16-byte prefixes, bytes below and above the usual ones, and
// unflagged IRIs before, after and inside the prefix's range.
func randomKey(rng *rand.Rand) []byte {
	kinds := []string{"call/e", "args/e", "result/e", "msg/e", "turn/e", "note/e", "tool/", "a", ""}
	rest := func() []byte {
		switch rng.IntN(8) {
		case 0: // a shared 16-byte prefix, then a few bytes
			b := []byte("abcdefghijklmnop")
			for n := rng.IntN(4); n > 0; n-- {
				b = append(b, "/>\x00\x01z9"[rng.IntN(6)])
			}
			return b
		case 1: // random bytes, zeros and 0xff included
			b := make([]byte, rng.IntN(24))
			for i := range b {
				b[i] = []byte{0, 1, '/', '>', 'e', '0', 0x7f, 0xff}[rng.IntN(8)]
			}
			return b
		default:
			b := fmt.Appendf(nil, "%s%d", kinds[rng.IntN(len(kinds))], rng.IntN(3000))
			if rng.IntN(3) == 0 {
				b = append(b, "/assoc"...)
			}
			return b
		}
	}
	if rng.IntN(10) == 0 {
		raws := []string{"<urn:witness:seal:sha256:00", "<urn:witness:s", "<urn:witness:r/x", "<urn:witness:t", "<a", "<urn:witness:s0", "<zz"}
		b := []byte(raws[rng.IntN(len(raws))])
		b = append(b, rest()...)
		if bytes.HasPrefix(b, []byte(testPrefix)) {
			// under the prefix the packer codes it with keyMark
			b = append([]byte{keyMark}, b[len(testPrefix):]...)
		}
		return append(b, '>')
	}
	b := append([]byte{keyMark}, rest()...)
	return append(b, '>')
}

// TestSortRecordsSameOrder: the radix sort orders random runs as the
// comparison sort did, both ways (N-Quads and byID), with duplicates.
func TestSortRecordsSameOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for _, n := range []int{0, 1, 2, 5, 31, 32, 33, 100, 1000, 20000} {
		for rep := 0; rep < 4; rep++ {
			keys := make([][]byte, n)
			for i := range keys {
				if i > 0 && rng.IntN(5) == 0 {
					keys[i] = keys[rng.IntN(i)] // a duplicate
				} else {
					keys[i] = randomKey(rng)
				}
			}
			for _, byID := range []bool{false, true} {
				checkSameOrder(t, testPrefix, byID, keys)
			}
		}
	}
}

// TestSortRecordsShapes: runs of one shape each (all equal, all sharing
// 16 bytes, all unflagged, no prefix).
func TestSortRecordsShapes(t *testing.T) {
	var same, shared, raw [][]byte
	for i := 0; i < 500; i++ {
		same = append(same, []byte("\x01call/e12/assoc>"))
		shared = append(shared, fmt.Appendf(nil, "\x01abcdefghijklmnop%d>", (i*7919)%500))
		raw = append(raw, fmt.Appendf(nil, "<urn:x:%d>", (i*7919)%500))
	}
	for _, byID := range []bool{false, true} {
		checkSameOrder(t, testPrefix, byID, same)
		checkSameOrder(t, testPrefix, byID, shared)
		checkSameOrder(t, testPrefix, byID, raw)
		checkSameOrder(t, "", byID, raw)
	}
}

// FuzzSortRecords compares the radix sort with slices.SortFunc and the
// old comparator on runs made of the input: its first byte chooses byID,
// the rest is split at '\n' into keys (flagged when the first byte is
// odd, or when the key is under the prefix, as the packer codes it), each with a few variants and a duplicate, so that runs pass the
// radix sort's small-bucket bound.
func FuzzSortRecords(f *testing.F) {
	f.Add([]byte("\x00\x01call/e1\n\x01call/e10\n\x00urn:x\n\x01abcdefghijklmnopq"))
	f.Add([]byte("\x01\x01args/e5/assoc\n\x01\n\x00urn:witness:s\n\x03result/e9"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 4096 {
			return
		}
		byID := data[0]&1 != 0
		var keys [][]byte
		for _, part := range bytes.Split(data[1:], []byte("\n")) {
			if len(part) == 0 {
				continue
			}
			mark := byte('<')
			if part[0]&1 != 0 {
				mark = keyMark
			}
			for v := 0; v < 4; v++ {
				k := append([]byte{mark}, part[1:]...)
				if v > 0 {
					k = append(k, "\x00/z"[v-1])
				}
				if mark == '<' && bytes.HasPrefix(k, []byte(testPrefix)) {
					// the packer codes every subject under the prefix
					// with keyMark (flushInto1): one subject, one key,
					// which memIter groups by its bytes
					k = append([]byte{keyMark}, k[len(testPrefix):]...)
				}
				keys = append(keys, append(k, '>'))
			}
			keys = append(keys, keys[len(keys)-4])
		}
		checkSameOrder(t, testPrefix, byID, keys)
	})
}

// benchRun is the first run of a generated log of n events, as the
// packer fills it (runBytes of blocks), unsorted.
func benchRun(b *testing.B, n, runBytes int, byID bool) *run {
	b.Helper()
	fr := eventlog.NewFastReader(bytes.NewReader(synthetic(b, n, 1)), "bench")
	fr.ShareLines(true)
	r := &run{recs: make([]rec, 0, runBytes/100), byID: byID}
	r.reset()
	ev := &evLines{}
	var m *mapper
	m = newMapper(Options{}, func(s, p string, o Term) error {
		if ev.prefix == nil && m.base != "" {
			ev.prefix = []byte("<" + m.base + "/")
		}
		ev.add(s, p, o)
		return nil
	})
	for r.size < runBytes {
		e, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		ev.reset()
		if err := m.event(e); err != nil {
			b.Fatal(err)
		}
		ev.endEvent()
		ev.flushInto(r)
	}
	return r
}

// BenchmarkSortRecords sorts the first 64 MiB run of a generated log
// (~370k records, ~170k events) the old way (slices.SortFunc) and the new
// (radix); ns/record is the figure to compare, cpu-ns/record (the
// process's CPU time, Linux) on a busy machine.
func BenchmarkSortRecords(b *testing.B) {
	for _, byID := range []bool{false, true} {
		r := benchRun(b, 200000, defaultRunBytes, byID)
		orig := slices.Clone(r.recs)
		for _, way := range []string{"old", "radix"} {
			b.Run(fmt.Sprintf("byID=%v/%s", byID, way), func(b *testing.B) {
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					copy(r.recs, orig)
					b.StartTimer()
					c0 := processCPU()
					if way == "old" {
						oldSortRecords(r, byID)
					} else {
						r.sortRecords(byID)
					}
					cpu += processCPU() - c0
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(orig)), "ns/record")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(orig)), "cpu-ns/record")
				b.ReportMetric(float64(len(orig)), "records")
			})
		}
	}
}
