package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock advances only when told to.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// lines splits what the reporter wrote into the lines it drew ("\r" each).
func drawn(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\r") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

func writeLog(t *testing.T, lines, width int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "events.jsonl")
	row := strings.Repeat("x", width-1) + "\n"
	if err := os.WriteFile(p, []byte(strings.Repeat(row, lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestThrottle: the first read draws the line, reads within Interval do
// not, the next read past it does; Done blanks the line.
func TestThrottle(t *testing.T) {
	path := writeLog(t, 100, 10) // 1000 bytes
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	p := New(&out, true, clk.now)
	f, _ := os.Open(path)
	defer f.Close()
	r := p.Reader(path, f, true)
	buf := make([]byte, 100)
	for i := 0; i < 4; i++ { // 4 reads in the same instant: one draw
		clk.t = clk.t.Add(10 * time.Millisecond)
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if got := drawn(out.String()); len(got) != 1 {
		t.Fatalf("drew %d lines within one interval, want 1: %q", len(got), got)
	}
	clk.t = clk.t.Add(Interval)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	got := drawn(out.String())
	if len(got) != 2 {
		t.Fatalf("drew %d lines, want 2: %q", len(got), got)
	}
	// 500 bytes in 290ms: 500 left at the same rate is 290ms, shown as 0:01
	want := "witness: reading events.jsonl: 50 events, 0.0 of 0.0 MB (50%), 0.0 MB/s (172 events/s), ETA 0:01"
	if got[1] != want {
		t.Errorf("line\n got %q\nwant %q", got[1], want)
	}
	p.Done()
	s := out.String()
	if !strings.HasSuffix(s, "\r") || strings.TrimSpace(s[strings.LastIndex(s[:len(s)-1], "\r"):]) != "" {
		t.Errorf("Done did not blank the line: %q", s[len(s)-20:])
	}
}

// TestETA: the ETA is the bytes left at the rate so far; a pipe (no size)
// has neither percentage nor ETA.
func TestETA(t *testing.T) {
	start := time.Unix(0, 0)
	at := &reading{name: "/x/events.jsonl", size: 100e6, events: true, start: start, bytes: 25e6, lines: 1000}
	got := line(at, start.Add(10*time.Second))
	want := "witness: reading events.jsonl: 1000 events, 25.0 of 100.0 MB (25%), 2.5 MB/s (100 events/s), ETA 0:30"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	at.size, at.events = -1, false
	got = line(at, start.Add(10*time.Second))
	if want := "witness: reading events.jsonl: 25.0 MB, 2.5 MB/s"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := clock(3725 * time.Second); got != "1:02:05" {
		t.Errorf("clock = %q", got)
	}
}

// TestDisabled: a disabled reporter writes nothing and hands readers back
// untouched; Enabled follows quiet, WITNESS_PROGRESS and the terminal.
func TestDisabled(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, false, nil)
	if p != nil {
		t.Fatal("New(enabled=false) is not nil")
	}
	src := strings.NewReader("a\nb\n")
	if r := p.Reader("x", src, true); r != io.Reader(src) {
		t.Error("a disabled reporter wrapped the reader")
	}
	if p.Wrap(true) != nil {
		t.Error("a disabled reporter gave a hook")
	}
	p.Done()
	if out.Len() != 0 {
		t.Errorf("a disabled reporter wrote %q", out.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct {
		w     io.Writer
		quiet bool
		force string
		want  bool
	}{
		{f, false, "", false},    // a file is not a terminal
		{&out, false, "", false}, // nor a buffer
		{f, false, "1", true},
		{f, true, "1", false}, // --quiet wins
		{f, false, "0", false},
	} {
		if got := Enabled(c.w, c.quiet, c.force); got != c.want {
			t.Errorf("Enabled(%T, quiet=%v, force=%q) = %v, want %v", c.w, c.quiet, c.force, got, c.want)
		}
	}
}
