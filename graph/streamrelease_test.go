package graph

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The run memory of a stream lives outside the Go heap and is released
// when the stream returns (streamBlocks). These tests run the stream's
// paths, success and abort, with the release in its checking mode
// (faultAfterRelease): the memory is made inaccessible, so a goroutine
// or a sink that touched it after the release would crash the test.

func faultsHere(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no PROT_NONE on " + runtime.GOOS)
	}
}

// TestStreamRunMemoryReleased: a block handed to the sink is run memory
// (the in-memory last run's blocks go to the sink as they are), and after
// the stream it faults: the check these tests rely on can fail.
func TestStreamRunMemoryReleased(t *testing.T) {
	faultsHere(t)
	log := synthetic(t, 200, 3)
	var kept []byte
	_, err := streamBlocks(NewEventSource(bytes.NewReader(log), "s"), Options{}, StreamOptions{TempDir: t.TempDir(), faultAfterRelease: true}, false, func(pre, blk []byte) (int64, error) {
		if kept == nil {
			kept = blk // what no sink may do
		}
		if !bytes.HasPrefix(kept, kept[:1]) { // readable during the stream
			t.Fatal("unreadable")
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept == nil {
		t.Fatal("no block")
	}
	if !faultsOnRead(kept) {
		t.Fatal("a block read after the stream ended did not fault: the run memory was not released")
	}
}

// faultsOnRead reports whether reading b[0] faults.
func faultsOnRead(b []byte) (f bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			_, f = r.(interface{ Addr() uintptr })
		}
	}()
	readSink = b[0]
	return false
}

var readSink byte

// TestStreamAbortReleases: the abort paths release the run memory only
// after the packer and the sorter stopped, and leave no run file: a bad
// event after the first spilled runs, a line that does not parse, a
// writer that fails mid-output (N-Quads and JSON-LD), a sink that fails
// (StreamViews), a spill that fails (no temporary directory).
func TestStreamAbortReleases(t *testing.T) {
	faultsHere(t)
	log := synthetic(t, 3000, 4)
	lines := bytes.Split(log, []byte("\n"))
	badTS := append([][]byte{}, lines...)
	badTS[2500] = bytes.Replace(badTS[2500], []byte(`"ts":"2026-`), []byte(`"ts":"x2026-`), 1)
	badLine := append([][]byte{}, lines...)
	badLine[2500] = []byte(`{"v":1,`)
	so := func(dir string) StreamOptions {
		return StreamOptions{RunBytes: 64 << 10, TempDir: dir, faultAfterRelease: true}
	}
	src := func(b []byte) EventSource { return NewEventSource(bytes.NewReader(b), "bad.jsonl") }
	errWrite := errors.New("disk full")
	cases := []struct {
		name string
		run  func(dir string) (StreamStats, error)
		want string
	}{
		{"bad event", func(dir string) (StreamStats, error) {
			return StreamNQuads(src(bytes.Join(badTS, []byte("\n"))), io.Discard, Options{}, so(dir))
		}, "not an RFC 3339 time"},
		{"bad line", func(dir string) (StreamStats, error) {
			return StreamJSONLD(src(bytes.Join(badLine, []byte("\n"))), io.Discard, Options{}, so(dir))
		}, "bad.jsonl:2501:"},
		{"writer fails (N-Quads)", func(dir string) (StreamStats, error) {
			return StreamNQuads(src(log), &failWriter{after: 3 << 20, err: errWrite}, Options{}, so(dir))
		}, "disk full"},
		{"writer fails (JSON-LD)", func(dir string) (StreamStats, error) {
			return StreamJSONLD(src(log), &failWriter{after: 1 << 20, err: errWrite}, Options{}, so(dir))
		}, "disk full"},
		{"sink fails", func(dir string) (StreamStats, error) {
			n := 0
			return StreamViews(src(log), Options{}, so(dir), func(*NodeView) error {
				if n++; n == 5000 {
					return errWrite
				}
				return nil
			})
		}, "disk full"},
		{"spill fails", func(dir string) (StreamStats, error) {
			return streamDOT(src(log), io.Discard, Options{}, DOTOptions{}, so(filepath.Join(dir, "missing")))
		}, "temporary run file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := c.run(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			// (the stats count runs once every event is mapped: an event
			// 2500 events in, at 64 KiB a run, comes after several)
			if strings.Contains(c.name, "fails (") || c.name == "sink fails" {
				if st.Runs < 3 {
					t.Fatalf("expected spilled runs, got %d", st.Runs)
				}
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("%d temporary files left", len(left))
			}
		})
	}
}

// failWriter fails once it was given more than after bytes.
type failWriter struct {
	n, after int
	err      error
}

func (w *failWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n > w.after {
		return 0, w.err
	}
	return len(p), nil
}
