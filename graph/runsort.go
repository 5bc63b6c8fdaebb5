package graph

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
	"sort"
)

// The records of a run are sorted by an in-place MSD radix sort (an
// "American flag" sort: a counting pass, then each record swapped straight
// into its bucket) on the 16 key bytes p, p2 that every record flagged
// keyMark carries, so most records are never compared at all. Records
// whose 16 bytes are equal (a subject's duplicate blocks, or keys longer
// than 16 bytes sharing them) and small buckets are finished by
// comparisons (recCmp); so are the few unflagged records, which are then
// merged in (a run of mostly unflagged records is sorted by comparisons
// alone, as before). The order is recCmp's, the one slices.SortFunc gave before;
// equal keys may land in any order (the blocks of one subject are merged
// whatever their order: memIter, merge). No memory beyond the unflagged
// records' copy; see docs/design/scale.md.

// radixSmall is the bucket size below which the radix sort hands a bucket
// to an insertion sort.
const radixSmall = 32

// recCmp orders two records of r by their sort keys (the "<subject>" key,
// without its closing '>' when drop is 1): by p, p2 when both keys begin
// with keyMark, then by the keys' bytes, keyMark standing for r.prefix.
func (r *run) recCmp(a, b *rec, drop int32) int {
	if a.ch&b.ch&1 != 0 {
		if c := cmpPrefix(a, b); c != 0 {
			return c
		}
	}
	return cmpKey(r.sortKeyOf(a, drop), r.sortKeyOf(b, drop), r.prefix)
}

// cmpPrefix orders two flagged records by their 16 key bytes after
// keyMark (p, then p2); 0 when those are equal.
func cmpPrefix(a, b *rec) int {
	if c := cmp.Compare(a.p, b.p); c != 0 {
		return c
	}
	return cmp.Compare(a.p2, b.p2)
}

// sortKeyOf is the part of record x's key it is ordered by.
func (r *run) sortKeyOf(x *rec, drop int32) []byte {
	return r.chunks[x.ch>>1][x.off : x.off+x.k-drop]
}

// sortRecs sorts recs in recCmp's order.
func (r *run) sortRecs(drop int32) {
	recs := r.recs
	unflagged := 0
	for i := range recs {
		unflagged += int(^recs[i].ch & 1)
	}
	if r.byID != (drop == 1) || unflagged > len(recs)/4 {
		// p, p2 were taken from the other kind of sort key (setKey), or
		// few keys have them (no session prefix): comparisons alone, in
		// place
		slices.SortFunc(recs, func(a, b rec) int {
			return cmpKey(r.sortKeyOf(&a, drop), r.sortKeyOf(&b, drop), r.prefix)
		})
		return
	}
	// the flagged records first, in their order; the unflagged ones
	// aside (one, the seal, in a generated log)
	other := make([]rec, 0, unflagged)
	w := 0
	for i := range recs {
		if recs[i].ch&1 != 0 {
			recs[w] = recs[i]
			w++
		} else {
			other = append(other, recs[i])
		}
	}
	flagged := recs[:w]
	r.radixSort(flagged, 0, drop)
	if len(other) == 0 {
		return
	}
	slices.SortFunc(other, func(a, b rec) int { return r.recCmp(&a, &b, drop) })
	// merged from the end: each unflagged record after the flagged ones
	// it follows, found by a binary search (the order of keyMark keys
	// and other keys depends on the prefix: the seal's record follows
	// them in one session and precedes them in another)
	i := w // flagged records not yet placed: recs[:i]
	for j := len(other) - 1; j >= 0; j-- {
		pos := sort.Search(i, func(x int) bool { return r.recCmp(&recs[x], &other[j], drop) > 0 })
		copy(recs[pos+j+1:i+j+1], recs[pos:i])
		recs[pos+j] = other[j]
		i = pos
	}
}

// keyByte is byte d (0-15) of the 16 key bytes p, p2 of x.
func keyByte(x *rec, d int) int {
	if d < 8 {
		return int(x.p >> (56 - 8*uint(d)) & 0xff)
	}
	return int(x.p2 >> (56 - 8*uint(d-8)) & 0xff)
}

// radixSort sorts a, flagged records whose 16 key bytes are equal before
// byte d, by recCmp.
func (r *run) radixSort(a []rec, d int, drop int32) {
	for {
		if len(a) <= radixSmall {
			r.insertionSort(a, drop)
			return
		}
		if d >= 16 {
			// the 16 bytes are equal: the rest of the keys decide
			slices.SortFunc(a, func(x, y rec) int { return r.flagCmp(&x, &y, drop) })
			return
		}
		var count [256]int32
		for i := range a {
			count[keyByte(&a[i], d)]++
		}
		if int(count[keyByte(&a[0], d)]) == len(a) {
			// one bucket: skip every byte the records share
			d = commonBytes(a)
			continue
		}
		lo, hi := 0, 255
		for count[lo] == 0 {
			lo++
		}
		for count[hi] == 0 {
			hi--
		}
		// head: the next free slot of each bucket
		var head [256]int32
		var off int32
		for b := lo; b <= hi; b++ {
			head[b] = off
			off += count[b]
		}
		// each record swapped into its bucket (American flag sort)
		off = 0
		for b := lo; b <= hi; b++ {
			end := off + count[b]
			for head[b] < end {
				v := a[head[b]]
				k := keyByte(&v, d)
				for k != b {
					j := head[k]
					head[k]++
					v, a[j] = a[j], v
					k = keyByte(&v, d)
				}
				a[head[b]] = v
				head[b]++
			}
			off = end
		}
		// each bucket by the next byte, the largest in this loop
		big := lo
		for b := lo; b <= hi; b++ {
			if count[b] > count[big] {
				big = b
			}
		}
		var start, bigStart int32
		for b := lo; b <= hi; b++ {
			n := count[b]
			if b == big {
				bigStart = start
			} else if n > 1 {
				r.radixSort(a[start:start+n], d+1, drop)
			}
			start += n
		}
		a, d = a[bigStart:bigStart+count[big]], d+1
	}
}

// commonBytes is the number of leading bytes of p, p2 all records of a
// share (16 when p and p2 are equal).
func commonBytes(a []rec) int {
	var x, y uint64
	p, p2 := a[0].p, a[0].p2
	for i := range a {
		x |= a[i].p ^ p
		y |= a[i].p2 ^ p2
	}
	if x != 0 {
		return bits.LeadingZeros64(x) / 8
	}
	if y != 0 {
		return 8 + bits.LeadingZeros64(y)/8
	}
	return 16
}

// flagCmp orders two flagged records of r as recCmp does, without reading
// their keys when p, p2 hold the whole of both (sort keys of up to 16
// bytes after keyMark, zero-padded: equal p, p2, the shorter key first).
func (r *run) flagCmp(a, b *rec, drop int32) int {
	if c := cmpPrefix(a, b); c != 0 {
		return c
	}
	la, lb := a.k-1-drop, b.k-1-drop
	if la <= 16 && lb <= 16 {
		return int(la - lb)
	}
	return bytes.Compare(r.sortKeyOf(a, drop)[1:], r.sortKeyOf(b, drop)[1:])
}

// insertionSort sorts a few flagged records by recCmp.
func (r *run) insertionSort(a []rec, drop int32) {
	for i := 1; i < len(a); i++ {
		v := a[i]
		j := i
		for ; j > 0 && r.flagCmp(&a[j-1], &v, drop) > 0; j-- {
			a[j] = a[j-1]
		}
		a[j] = v
	}
}
