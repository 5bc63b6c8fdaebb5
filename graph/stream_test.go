package graph

import (
	"bytes"
	"fmt"
	"testing"
)

// TestStreamEqualsInMemory: the streamed, externally sorted N-Quads equal
// the in-memory graph's, whatever the run size (many spilled runs here).
func TestStreamEqualsInMemory(t *testing.T) {
	logs := map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "synthetic-3000": synthetic(t, 3000, 5)}
	for name, log := range logs {
		g := buildBytes(t, log, Options{})
		var want bytes.Buffer
		wd, err := g.WriteNQuads(&want)
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{1, 4 << 10, 256 << 10, DefaultRunBytes}
		if len(log) > 1<<20 {
			sizes = []int{256 << 10, DefaultRunBytes}
		}
		for _, rb := range sizes {
			t.Run(fmt.Sprintf("%s/run%d", name, rb), func(t *testing.T) {
				var got bytes.Buffer
				st, err := StreamNQuads(NewEventSource(bytes.NewReader(log), name), &got, Options{}, StreamOptions{RunBytes: rb, TempDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("stream differs from in-memory (%d runs): %d vs %d bytes", st.Runs, got.Len(), want.Len())
				}
				if st.Digest != wd || st.Bytes != int64(want.Len()) || st.Quads != int64(bytes.Count(want.Bytes(), []byte("\n"))) {
					t.Fatalf("stats %+v, want digest %s", st, wd)
				}
				if rb*4 < len(want.Bytes()) && st.Runs < 3 {
					t.Fatalf("expected spilled runs, got %d", st.Runs)
				}
			})
		}
	}
}
