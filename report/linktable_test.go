package report

import (
	"fmt"
	"reflect"
	"testing"
)

// linkEvents turns fuzz bytes into events (id, links), from an alphabet of
// ids that are and are not the writer's "e<row>": repeated ids, ids of
// another row, leading zeros, signs, huge numbers, links to unknown ids.
func linkEvents(data []byte) (ids []string, links [][]string) {
	alpha := func(b byte, row int) string {
		switch b % 12 {
		case 0, 1, 2, 3:
			return fmt.Sprintf("e%d", row) // the writer's id (as a link: to the event itself)
		case 4, 5:
			return fmt.Sprintf("e%d", int(b/12)%8) // an earlier or later row
		case 6:
			return fmt.Sprintf("e0%d", int(b/12)%8)
		case 7:
			return "e"
		case 8:
			return "e99999999999"
		case 9:
			return "e2147483648"
		case 10:
			return fmt.Sprintf("x%d", int(b/12)%4)
		}
		return ""
	}
	for i := 0; i+1 < len(data); i += 2 {
		row := len(ids)
		ids = append(ids, alpha(data[i], row))
		var l []string
		for k := 0; k < int(data[i+1]%4); k++ {
			l = append(l, alpha(data[i+1]+byte(k*37), row-k-1))
		}
		links = append(links, l)
	}
	return ids, links
}

// sameLinks checks the table against the map it replaces: every lookup,
// and chainEvents on the closure against chainEvents on the map.
func sameLinks(t *testing.T, data []byte) {
	ids, links := linkEvents(data)
	want := map[string][]string{}
	var tab linkTable
	for i := range ids {
		if len(links[i]) > 0 {
			want[ids[i]] = links[i]
		}
		tab.add(i, ids[i], links[i])
	}
	probe := append(append([]string{}, ids...), "e0", "e1", "e7", "e00", "e-1", "nope")
	for _, id := range probe {
		if got := tab.lookup(id); !reflect.DeepEqual(got, want[id]) {
			t.Fatalf("lookup %q: %q, want %q (ids %q links %q)", id, got, want[id], ids, links)
		}
	}
	for _, start := range [][]string{ids, probe[len(ids):], {""}} {
		w, wok := chainEvents(start, want)
		g, gok := chainEvents(start, tab.closure(start))
		if wok != gok || !reflect.DeepEqual(w, g) {
			t.Fatalf("chainEvents from %q: %v %v, want %v %v", start, g, gok, w, wok)
		}
	}
}

func TestLinkTableSameAsMap(t *testing.T) {
	for _, d := range []string{"", "\x00\x01\x00\x02\x04\x03", "\x06\x01\x07\x02\x08\x03\x09\x01\x0a\x03\x00\x00", "\x04\x05\x10\x11\x00\x03\x04\x02"} {
		sameLinks(t, []byte(d))
	}
	// a chain of the writer's ids: kept as numbers, no map
	var tab linkTable
	for i := 0; i < 100; i++ {
		var l []string
		if i > 0 {
			l = []string{fmt.Sprintf("e%d", i-1)}
		}
		tab.add(i, fmt.Sprintf("e%d", i), l)
	}
	if tab.odd != nil || len(tab.to) != 99 {
		t.Fatalf("writer's ids went to the map: %d odd, %d numbers", len(tab.odd), len(tab.to))
	}
	if c := tab.closure([]string{"e99"}); len(c) != 99 || c["e50"][0] != "e49" {
		t.Fatalf("closure: %d events", len(c))
	}
}

func FuzzLinkTable(f *testing.F) {
	f.Add([]byte("\x00\x01\x00\x02\x04\x03"))
	f.Add([]byte("\x06\x01\x07\x02\x08\x03\x09\x01\x0a\x03\x00\x00"))
	f.Fuzz(sameLinks)
}

// FuzzRowSet checks that rowSet.has is membership in the first pass's
// rowOf (the first id of each row) for rows of writer's and other ids and
// for any query.
func FuzzRowSet(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "e2")
	f.Add([]byte{0, 1, 4, 3}, "e3")
	f.Add([]byte{0, 11, 2}, "")
	f.Add([]byte{0, 6, 2}, "e01")
	f.Fuzz(func(t *testing.T, data []byte, q string) {
		ids, _ := linkEvents(data)
		rowOf := map[string]int{}
		for row, id := range ids {
			if _, dup := rowOf[id]; !dup {
				rowOf[id] = row
			}
		}
		s := newRowSet(rowOf)
		for _, id := range append(ids, q, "e0", "e1", fmt.Sprintf("e%d", len(ids)), fmt.Sprintf("e%d", len(ids)-1)) {
			_, want := rowOf[id]
			if got := s.has([]byte(id)); got != want {
				t.Fatalf("ids %q: has(%q) = %v, rowOf has it: %v (writer %v)", ids, id, got, want, s.writer)
			}
			if r, ok := s.row(id); ok != want || (ok && r != rowOf[id]) {
				t.Fatalf("ids %q: row(%q) = %d, %v, rowOf: %d, %v (writer %v)", ids, id, r, ok, rowOf[id], want, s.writer)
			}
		}
		if _, want := rowOf[""]; s.noID != want {
			t.Fatalf("ids %q: noID %v", ids, s.noID)
		}
	})
}

// TestRowSetWriter: the writer's ids are read from the id, not the map.
func TestRowSetWriter(t *testing.T) {
	rowOf := map[string]int{}
	for i := range 1000 {
		rowOf[fmt.Sprintf("e%d", i)] = i
	}
	if s := newRowSet(rowOf); !s.writer {
		t.Fatal("the writer's ids are not recognised")
	}
	rowOf["e5"] = 7
	if s := newRowSet(rowOf); s.writer {
		t.Fatal("an id of another row is taken as the writer's")
	}
}
