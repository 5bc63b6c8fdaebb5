package replay

import (
	"sort"
	"strings"
)

// maxSuggestions is how many near ids a usage hint lists.
const maxSuggestions = 5

// editScanLimit bounds the full edit-distance scan; larger graphs use only
// the sorted neighbourhood (shared prefix) and suffix matches.
const editScanLimit = 100000

type cand struct {
	id    string
	score int
}

// topK keeps the maxSuggestions best candidates (lowest score, then id).
type topK struct{ c []cand }

func (t *topK) worst() int {
	if len(t.c) < maxSuggestions {
		return int(^uint(0) >> 1)
	}
	return t.c[len(t.c)-1].score
}

func (t *topK) add(c cand) {
	for _, x := range t.c {
		if x.id == c.id {
			return
		}
	}
	i := sort.Search(len(t.c), func(i int) bool {
		x := t.c[i]
		return x.score > c.score || x.score == c.score && x.id > c.id
	})
	if i >= maxSuggestions {
		return
	}
	t.c = append(t.c, cand{})
	copy(t.c[i+1:], t.c[i:])
	t.c[i] = c
	if len(t.c) > maxSuggestions {
		t.c = t.c[:maxSuggestions]
	}
}

// nearest returns up to maxSuggestions ids of removable nodes close to q:
// the ids sharing the longest prefix with q (found by binary search in the
// sorted ids) and ids ending with q's last path segment score first; on
// graphs of at most editScanLimit nodes, every removable id is scored by
// edit distance (bounded by the current fifth best). Ties are broken by id,
// so hints are deterministic.
func (ix *index) nearest(q string) []string {
	var t topK
	seg := q
	if k := strings.LastIndexAny(q, "/#:"); k >= 0 && k+1 < len(q) {
		seg = q[k+1:]
	}
	score := func(i int) {
		if !ix.recs[i].Kind.Removable() {
			return
		}
		id := ix.ids[i]
		if seg != "" && strings.HasSuffix(id, "/"+seg) {
			t.add(cand{id, 0})
			return
		}
		if d := distanceCap(q, id, t.worst()); d <= t.worst() {
			t.add(cand{id, d})
		}
	}
	at := sort.SearchStrings(ix.ids, q)
	for i, k := at-1, 0; i >= 0 && k < 2*maxSuggestions; i, k = i-1, k+1 {
		score(i)
	}
	for i, k := at, 0; i < ix.n() && k < 2*maxSuggestions; i, k = i+1, k+1 {
		score(i)
	}
	if ix.n() <= editScanLimit {
		for i := range ix.ids {
			score(i)
		}
	}
	out := make([]string, len(t.c))
	for i, c := range t.c {
		out[i] = c.id
	}
	return out
}

// distanceCap is the Levenshtein distance between a and b over bytes, or a
// value above limit as soon as it is certain to exceed limit.
func distanceCap(a, b string, limit int) int {
	if a == b {
		return 0
	}
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
