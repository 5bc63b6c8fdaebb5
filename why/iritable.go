package why

import (
	"bytes"
	"hash/maphash"
)

// iriTable interns IRIs to dense int32 numbers without a pointer per IRI:
// the bytes in fixed chunks, an open-addressing table of numbers, so that
// the collector has nothing to scan in it however many IRIs it holds (a
// map[string]int32 of a million-event graph's IRIs costs a collection
// cycle a pass over millions of strings).
type iriTable struct {
	seed   maphash.Seed
	chunks [][]byte
	at     []iriAt // by number
	slots  []int32 // number+1, 0 empty; len a power of two
}

// iriAt is where the bytes of an IRI are.
type iriAt struct{ chunk, off, n uint32 }

const iriChunk = 4 << 20

func newIRITable() *iriTable {
	return &iriTable{seed: maphash.MakeSeed(), slots: make([]int32, 1<<10)}
}

// Len is the number of IRIs.
func (t *iriTable) Len() int { return len(t.at) }

// bytes returns the IRI numbered k.
func (t *iriTable) bytes(k int32) []byte {
	a := t.at[k]
	return t.chunks[a.chunk][a.off : a.off+a.n]
}

// find returns the slot of s: the one holding it, or the empty one where
// it goes.
func (t *iriTable) find(s string) int {
	mask := len(t.slots) - 1
	i := int(maphash.String(t.seed, s)) & mask
	for {
		v := t.slots[i]
		if v == 0 || string(t.bytes(v-1)) == s {
			return i
		}
		i = (i + 1) & mask
	}
}

// findBytes is find for an IRI given as bytes.
func (t *iriTable) findBytes(s []byte) int {
	mask := len(t.slots) - 1
	i := int(maphash.Bytes(t.seed, s)) & mask
	for {
		v := t.slots[i]
		if v == 0 || bytes.Equal(t.bytes(v-1), s) {
			return i
		}
		i = (i + 1) & mask
	}
}

// InternBytes is Intern for an IRI given as bytes (copied when new).
func (t *iriTable) InternBytes(s []byte) int32 {
	i := t.findBytes(s)
	if v := t.slots[i]; v != 0 {
		return v - 1
	}
	return t.add(i, store(t, s))
}

// Lookup returns the number of s, if it has one.
func (t *iriTable) Lookup(s string) (int32, bool) {
	v := t.slots[t.find(s)]
	return v - 1, v != 0
}

// Intern returns the number of s, giving it the next one if s is new.
func (t *iriTable) Intern(s string) int32 {
	i := t.find(s)
	if v := t.slots[i]; v != 0 {
		return v - 1
	}
	return t.add(i, store(t, s))
}

// add numbers the IRI stored at a, in the empty slot i.
func (t *iriTable) add(i int, a iriAt) int32 {
	k := int32(len(t.at))
	t.at = append(t.at, a)
	t.slots[i] = k + 1
	if 4*len(t.at) > 3*len(t.slots) {
		t.grow()
	}
	return k
}

// store copies s into the chunks of t.
func store[S string | []byte](t *iriTable, s S) iriAt {
	last := len(t.chunks) - 1
	if last < 0 || len(t.chunks[last])+len(s) > cap(t.chunks[last]) {
		t.chunks = append(t.chunks, make([]byte, 0, max(iriChunk, len(s))))
		last++
	}
	c := t.chunks[last]
	a := iriAt{chunk: uint32(last), off: uint32(len(c)), n: uint32(len(s))}
	t.chunks[last] = append(c, s...)
	return a
}

// grow doubles the table.
func (t *iriTable) grow() {
	old := t.slots
	t.slots = make([]int32, 2*len(old))
	mask := len(t.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := int(maphash.Bytes(t.seed, t.bytes(v-1))) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = v
	}
}
