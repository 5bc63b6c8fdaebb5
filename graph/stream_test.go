package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// TestStreamEqualsInMemory: the streamed, externally sorted N-Quads equal
// the in-memory graph's, whatever the run size (many spilled runs here).
func TestStreamEqualsInMemory(t *testing.T) {
	logs := map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "surface": surfaceLog(t), "synthetic-3000": synthetic(t, 3000, 5)}
	for name, log := range logs {
		g := buildBytes(t, log, Options{})
		var want bytes.Buffer
		wd, err := g.WriteNQuads(&want)
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{1, 4 << 10, 256 << 10, defaultRunBytes}
		if len(log) > 1<<20 {
			sizes = []int{256 << 10, defaultRunBytes}
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
				if rb*8 < len(want.Bytes()) && st.Runs < 3 { // runs hold compact lines, 2-3x smaller
					t.Fatalf("expected spilled runs, got %d", st.Runs)
				}
			})
		}
	}
}

// TestStreamErrorCleansUp: an invalid event after several spilled runs
// stops the stream with an evidence error naming the file and event, and
// leaves no temporary run behind.
func TestStreamErrorCleansUp(t *testing.T) {
	log := synthetic(t, 3000, 4)
	lines := bytes.Split(log, []byte("\n"))
	lines[2500] = bytes.Replace(lines[2500], []byte(`"ts":"2026-`), []byte(`"ts":"x2026-`), 1)
	bad := bytes.Join(lines, []byte("\n"))
	dir := t.TempDir()
	_, err := StreamNQuads(NewEventSource(bytes.NewReader(bad), "bad.jsonl"), io.Discard, Options{}, StreamOptions{RunBytes: 64 << 10, TempDir: dir})
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl: $.ts: not an RFC 3339 time: \"x2026-08-30T14:38:17.607Z\" (event e2500, seq 2500)") {
		t.Fatalf("error %v", err)
	}
	var ce *exitcode.Error
	if !errors.As(err, &ce) || ce.Code != exitcode.Tampered {
		t.Fatalf("error %v does not carry Tampered", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d temporary files left", len(left))
	}
	// a line that does not parse
	lines[2500] = []byte(`{"v":1,`)
	_, err = StreamNQuads(NewEventSource(bytes.NewReader(bytes.Join(lines, []byte("\n"))), "bad.jsonl"), io.Discard, Options{}, StreamOptions{RunBytes: 64 << 10, TempDir: dir})
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2501:") {
		t.Fatalf("error %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d temporary files left", len(left))
	}
}

// TestSortLines: the packer's insertion sort on 8-byte prefixes orders a
// subject's lines as bytes.Compare does, for lines sharing long prefixes,
// shorter than 8 bytes, equal, and more than the insertion sort takes.
func TestSortLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	alpha := []string{"", "a", "ab", "abcdefgh", "abcdefghi", "abcdefghij", "\x01", "abcdefgh\x00", "b"}
	for _, n := range []int{2, 3, 7, 31, 32, 33, 60} {
		for round := 0; round < 50; round++ {
			e := &evLines{}
			idx := make([]int, n)
			for i := range idx {
				l := alpha[rng.IntN(len(alpha))] + alpha[rng.IntN(len(alpha))]
				off := len(e.buf)
				e.buf = append(e.buf, l...)
				e.lines = append(e.lines, evLine{off: int32(off), end: int32(len(e.buf))})
				idx[i] = i
			}
			e.sortLines(idx)
			for i := 1; i < n; i++ {
				if bytes.Compare(e.line(idx[i-1]), e.line(idx[i])) > 0 {
					t.Fatalf("n=%d: line %d %q sorts after %q", n, i, e.line(idx[i-1]), e.line(idx[i]))
				}
			}
		}
	}
}
