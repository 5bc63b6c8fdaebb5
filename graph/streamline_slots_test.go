package graph

import "testing"

// TestCodeTableSlots: every known IRI is found by rank with its sorted
// rank, and a table's unknown IRIs (a known one with a byte changed,
// prefixes, extensions) get the odd rank of where they sort.
func TestCodeTableSlots(t *testing.T) {
	for _, tb := range []*codeTable{streamPreds, streamTypes, streamClasses} {
		probes := 0
		for i, s := range tb.iris {
			r, ok := tb.rank(s)
			if !ok || r != byte(2*i+2) {
				t.Fatalf("rank(%q) = %d, %v; want %d, true", s, r, ok, 2*i+2)
			}
			for h := slotHash(s); tb.slots[h].iri != s; h = (h + 1) % codeSlots {
				probes++
			}
			for _, u := range []string{s[:len(s)-1], s + "x", s + ">", "x" + s, s[:len(s)/2] + "\x00" + s[len(s)/2+1:]} {
				r, ok := tb.rank(u)
				if ok {
					t.Fatalf("rank(%q) known", u)
				}
				j := 0
				for j < len(tb.iris) && compareKey(tb.iris[j], u) < 0 {
					j++
				}
				if r != byte(2*j+1) {
					t.Fatalf("rank(%q) = %d, want %d", u, r, 2*j+1)
				}
			}
		}
		t.Logf("%d IRIs, %d extra probes", len(tb.iris), probes)
	}
	if r, ok := streamPreds.rank(""); ok || r != 1 {
		t.Fatalf(`rank("") = %d, %v`, r, ok)
	}
}
