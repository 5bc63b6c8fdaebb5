package graph

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

func TestAnalyzeRun(t *testing.T) {
	path := os.Getenv("RUNLOG")
	if path == "" {
		t.Skip()
	}
	f, _ := os.Open(path)
	fr := eventlog.NewFastReader(f, "bench")
	r := &run{recs: make([]rec, 0, DefaultRunBytes/100)}
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
	skip := 1
	for k := 0; k < skip; k++ {
		r.reset()
		r.prefix = nil
		for r.size < DefaultRunBytes {
			ev.reset()
			e, err := fr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := m.event(e); err != nil {
				t.Fatal(err)
			}
			ev.endEvent()
			ev.flushInto(r)
		}
	}
	flag := 0
	keys := map[string]int{}
	asc, desc := 0, 0
	for i, x := range r.recs {
		flag += int(x.ch & 1)
		k := string(r.chunks[x.c()][x.off : x.off+x.k])
		keys[k]++
		if i > 0 {
			y := r.recs[i-1]
			if y.p < x.p || (y.p == x.p && y.p2 <= x.p2) {
				asc++
			} else {
				desc++
			}
		}
	}
	fmt.Println("recs", len(r.recs), "flagged", flag, "distinct", len(keys), "asc", asc, "desc", desc, "prefix", string(r.prefix))
	type kv struct {
		k string
		n int
	}
	var top []kv
	for k, n := range keys {
		top = append(top, kv{k, n})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n })
	for _, x := range top[:10] {
		fmt.Printf("%q %d\n", x.k, x.n)
	}
	hist := map[int]int{}
	for _, x := range top {
		hist[x.n]++
	}
	fmt.Println("dup hist", hist)
	lens := map[int]int{}
	for k := range keys {
		lens[len(k)]++
	}
	fmt.Println("lens", lens)
	for i := 0; i < 40; i++ {
		x := r.recs[i]
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], x.p)
		binary.BigEndian.PutUint64(b[8:], x.p2)
		fmt.Printf("%q %q\n", r.chunks[x.c()][x.off:x.off+x.k], bytes.TrimRight(b[:], "\x00"))
	}
}
