package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/verify"
)

// tapCompare builds the report of o twice, once from the events verify.Run
// decoded (logTap) and once with the page and the graph stream reading the
// file themselves (readsLog), and returns both pages (as JSON) or errors.
func tapCompare(t testing.TB, o Options) (tap, own string) {
	t.Helper()
	show := func(d *Data, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		b, merr := json.Marshal(d)
		if merr != nil {
			t.Fatal(merr)
		}
		return string(b)
	}
	tap = show(Build(o))
	o.readsLog = true
	own = show(Build(o))
	return tap, own
}

func diffAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(i-150, 0)
	return fmt.Sprintf("at byte %d:\n tap: %s\n own: %s", i, a[lo:min(i+150, len(a))], b[lo:min(i+150, len(b))])
}

// TestTapSameAsReaders: the page built from the events verify.Run decoded
// (one read of the log, logTap) is the page built by the first pass's and
// the graph stream's own readers of the file, on whole, cut and damaged
// logs (the read note and the stream's "no causal graph" note name the
// same line and error), with and without a seal, compact or not, and when
// verify does not read the log (an invalid seal).
func TestTapSameAsReaders(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string { return writeTestFile(t, dir, name, b) }
	fx := fixtureOptions(t)
	raw, err := os.ReadFile(fx.Events[0])
	if err != nil {
		t.Fatal(err)
	}
	var synth bytes.Buffer
	if err := synthlog.Generate(&synth, 400, 7, "tap"); err != nil {
		t.Fatal(err)
	}
	mid := bytes.IndexByte(raw[len(raw)/2:], '\n') + len(raw)/2 + 1
	insert := func(s string) []byte {
		return append(append(append([]byte(nil), raw[:mid]...), s...), raw[mid:]...)
	}
	sealBytes, err := os.ReadFile(fx.Verify.SealFile)
	if err != nil {
		t.Fatal(err)
	}
	badSeal := bytes.Replace(sealBytes, []byte(`"`), []byte(`'`), 1)
	logs := map[string][]byte{
		"whole":      raw,
		"cut":        raw[:len(raw)*2/3],                      // a cut-off last line that is no event
		"cut-event":  raw[:len(raw)-1],                        // a last line without its newline that is one
		"bad-line":   insert("{\"not\":\"an event\"}\n"),      // a line that is not an event
		"blank-line": insert("  \n"),                          // a blank line
		"deep":       insert(strings.Repeat("[", 300) + "\n"), // nested too deep
		"blank-tail": append(append([]byte(nil), raw...), "   "...),
		"deep-tail":  append(append([]byte(nil), raw...), strings.Repeat("[", 300)...),
		"synth":      synth.Bytes(),
		"empty":      nil,
	}
	cutNotes := 0
	for name, b := range logs {
		p := write(name+".jsonl", b)
		for _, v := range []struct {
			name string
			o    verify.Options
		}{
			{"seal", fx.Verify},
			{"noseal", verify.Options{AllowUnsigned: true}},
			{"badseal", verify.Options{SealFile: write("badseal.json", badSeal), SealKeys: fx.Verify.SealKeys, EndVerifier: fx.Verify.EndVerifier}},
		} {
			for _, above := range []int{-1, 1 << 30} {
				o := Options{Events: []string{p}, Verify: v.o, Generated: fx.Generated, CompactAbove: above, MaxGraphNodes: 100, MaxDetails: 20,
					Stream: graph.StreamOptions{RunBytes: 1 << 20, TempDir: dir}}
				tap, own := tapCompare(t, o)
				if tap != own {
					t.Errorf("%s, %s, compact above %d: %s", name, v.name, above, diffAt(tap, own))
				}
				if strings.Contains(tap, "no causal graph: ") && strings.Contains(tap, "cut off") {
					cutNotes++
				}
			}
		}
	}
	if cutNotes == 0 {
		t.Error("no page says its graph stream stopped at a cut-off line: the comparison shows nothing about the stream's errors")
	}
}

// TestTapNoLeak: the report's goroutines (verify's readers, the tap's
// consumers, the graph stream and its stages) all end, whether the stream
// is used, canceled (a log too short to be reported compactly), started
// for nothing (verify fails before it reads the log) or restarted (verify
// did not read the log).
func TestTapNoLeak(t *testing.T) {
	dir := t.TempDir()
	fx := fixtureOptions(t)
	raw, err := os.ReadFile(fx.Events[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.jsonl")
	if err := os.WriteFile(cut, raw[:len(raw)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	sealBytes, err := os.ReadFile(fx.Verify.SealFile)
	if err != nil {
		t.Fatal(err)
	}
	badSeal := filepath.Join(dir, "badseal.json")
	if err := os.WriteFile(badSeal, bytes.Replace(sealBytes, []byte(`"`), []byte(`'`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	events, ok := 0, 0
	base := runtime.NumGoroutine()
	for _, c := range []struct {
		name  string
		edit  func(*Options)
		fails bool
	}{
		{"compact", func(o *Options) { o.CompactAbove = -1 }, false},
		{"compact-cut", func(o *Options) { o.CompactAbove = -1; o.Events = []string{cut} }, false},
		// the stream starts (every log is likely compact), then the count says no
		{"canceled", func(o *Options) { o.CompactAbove = events }, false},
		{"canceled-cut", func(o *Options) { o.CompactAbove = events; o.Events = []string{cut} }, false},
		{"no-seal-file", func(o *Options) { o.CompactAbove = -1; o.Verify.SealFile = filepath.Join(dir, "missing.json") }, true},
		{"invalid-seal", func(o *Options) { o.CompactAbove = -1; o.Verify.SealFile = badSeal }, false},
	} {
		o := fixtureOptions(t)
		o.Stream = graph.StreamOptions{RunBytes: 1 << 20, TempDir: dir}
		c.edit(&o)
		d, err := Build(o)
		if (err != nil) != c.fails {
			t.Fatalf("%s: error %v, want one: %v", c.name, err, c.fails)
		}
		if d != nil {
			events = d.Logs[0].Events
			ok++
		}
	}
	if ok < 5 {
		t.Fatalf("%d pages built, want 5", ok)
	}
	// goroutines end after Build returns (the stream's cleanup); wait
	// for them, failing only if some never end
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left running (%d before):\n%s", n-base, base, buf[:runtime.Stack(buf, true)])
	}
}

// FuzzTapSameAsReaders: on any bytes as an event log, the page (or error)
// built from the events verify.Run decoded is the one built by the page's
// and the graph stream's own readers of the file.
func FuzzTapSameAsReaders(f *testing.F) {
	ev, err := os.ReadFile(filepath.Join(fixture, "events.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ev)
	f.Add(ev[:len(ev)/2])
	f.Add(append(append([]byte(nil), ev...), "{\"v\":1"...))
	f.Add([]byte("{}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "events.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o := Options{Events: []string{p}, Verify: verify.Options{AllowUnsigned: true}, Generated: "2026-08-30T14:33:00+00:00",
			CompactAbove: -1, MaxGraphNodes: 50, MaxDetails: 10, Stream: graph.StreamOptions{RunBytes: 1 << 20, TempDir: dir}}
		if tap, own := tapCompare(t, o); tap != own {
			t.Fatalf("%s", diffAt(tap, own))
		}
	})
}
