package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/seal"
)

// scaleGoldenFile holds the sha256 of each report of TestScaleGolden.
const scaleGoldenFile = "testdata/scale-golden.sha256"

var updateScaleGolden = flag.Bool("update-scale-golden", false, "rewrite testdata/scale-golden from the current code")

// scaleCase is one synthetic log of TestScaleGolden: a synthlog log,
// re-signed or tampered.
type scaleCase struct {
	name      string
	log       []byte
	noSeal    bool // integrity only
	withGraph bool // --graph G --events E, G the log's own graph
	graphOf   []byte
}

// synthLog is synthlog.Generate's log of n events.
func synthLog(t *testing.T, n int, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := synthlog.Generate(&b, n, seed, fmt.Sprintf("synth-%d", seed)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resign rewrites a synthetic log with a derived session id and an end
// signed by testKey: a log whose chain verifies, judged on its events.
func resign(t *testing.T, data []byte) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var out bytes.Buffer
	var w *eventlog.Writer
	for i, l := range lines[:len(lines)-1] {
		e, perr := eventlog.DecodeEvent(l)
		if perr != nil {
			t.Fatal(perr)
		}
		if i == 0 {
			var err error
			if w, err = eventlog.StartLog(&out, e.Header, e.TS, e.Source); err != nil {
				t.Fatal(err)
			}
			continue
		}
		e.ID, e.Session, e.Prev = "", "", ""
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := eventlog.FinishWith(w, eventlog.EndOptions{Signers: []eventlog.Signer{testKey}, TS: testTS, Reason: "closed"}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// edit applies f to the lines of a log (without their newlines) and joins
// them again.
func edit(data []byte, f func(lines [][]byte) [][]byte) []byte {
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	cp := make([][]byte, len(lines))
	for i := range lines {
		cp[i] = append([]byte(nil), lines[i]...)
	}
	out := bytes.Join(f(cp), []byte("\n"))
	return append(out, '\n')
}

func scaleCases(t *testing.T) []scaleCase {
	raw := synthLog(t, 3000, 1)
	signed := resign(t, synthLog(t, 2500, 2))
	other := resign(t, synthLog(t, 400, 3))
	flip := func(l []byte, from, to string) []byte {
		return bytes.Replace(l, []byte(from), []byte(to), 1)
	}
	return []scaleCase{
		{name: "raw", log: raw},
		{name: "raw-integrity", log: raw, noSeal: true},
		{name: "signed", log: signed},
		{name: "signed-integrity", log: signed, noSeal: true},
		{name: "signed-graph", log: signed, withGraph: true, graphOf: signed},
		{name: "signed-graph-other", log: signed, withGraph: true, graphOf: other},
		{name: "edited-payload", log: edit(signed, func(ls [][]byte) [][]byte {
			for i := 700; i < len(ls); i++ {
				if bytes.Contains(ls[i], []byte(`"payload":"`)) {
					ls[i] = flip(ls[i], `"payload":"`, `"payload":"X`)
					break
				}
			}
			return ls
		})},
		{name: "edited-link", log: edit(signed, func(ls [][]byte) [][]byte {
			for i := 100; i < 2000; i += 97 {
				ls[i] = flip(ls[i], `"call":"e`, `"call":"e9`)
				ls[i] = flip(ls[i], `"cause":"e`, `"cause":"e0`)
			}
			return ls
		})},
		{name: "deleted", log: edit(signed, func(ls [][]byte) [][]byte {
			return append(ls[:1200], ls[1201:]...)
		})},
		{name: "swapped", log: edit(signed, func(ls [][]byte) [][]byte {
			ls[300], ls[301] = ls[301], ls[300]
			return ls
		})},
		{name: "garbage", log: edit(signed, func(ls [][]byte) [][]byte {
			ls[50] = []byte(`{"not":"an event"`)
			ls[51] = []byte(``)
			ls[52] = []byte(`{"v":1,"id":"e52","kind":"tool_call","seq":52}`)
			return ls
		})},
		{name: "cut", log: func() []byte {
			b := edit(signed, func(ls [][]byte) [][]byte { return ls[:len(ls)-3] })
			return b[:len(b)-40]
		}()},
		{name: "cut-integrity", noSeal: true, log: func() []byte {
			b := edit(signed, func(ls [][]byte) [][]byte { return ls[:len(ls)-3] })
			return b[:len(b)-40]
		}()},
		{name: "many", log: edit(raw, func(ls [][]byte) [][]byte {
			for i := 10; i < len(ls); i += 13 {
				ls[i] = flip(ls[i], `"ts":"2026`, `"ts":"2027`)
			}
			return ls
		})},
		{name: "end-edited", log: edit(signed, func(ls [][]byte) [][]byte {
			n := len(ls) - 1
			ls[n] = flip(ls[n], `"reason":"closed"`, `"reason":"crashed"`)
			return ls
		})},
	}
}

// TestScaleGolden holds verify's reports on synthetic logs (internal/synthlog,
// thousands of events: clean, re-signed, tampered in many ways, integrity
// only, with the log's own graph and another's) to the bytes the code gave
// before verify was reworked for a million events (issue 17): JSON and text.
// The sha256 of each report is kept (testdata/scale-golden.sha256; a report
// that differs is written to the temporary directory for a diff).
// Regenerate with -update-scale-golden only when a report is meant to change.
func TestScaleGolden(t *testing.T) {
	dir := t.TempDir()
	sealFile := filepath.Join("..", "testdata", "compat", "atw-0.1.0", "seal_without_damaging_tool.json")
	golden := readScaleGolden(t)
	newGolden := map[string]string{}
	for _, c := range scaleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			events := filepath.Join(dir, c.name+".jsonl")
			if err := os.WriteFile(events, c.log, 0o644); err != nil {
				t.Fatal(err)
			}
			o := Options{
				SealFile: sealFile, EventsFile: events,
				SealKeys:    seal.VerifyOptions{LegacyKeyHex: strings.Repeat("0", 64)},
				EndVerifier: testKey,
			}
			if c.noSeal {
				o.SealFile = ""
			}
			if c.withGraph {
				g := filepath.Join(dir, c.name+".jsonld")
				var buf bytes.Buffer
				if _, err := graph.StreamJSONLD(graph.NewEventSource(bytes.NewReader(c.graphOf), "g"), &buf, graph.Options{}, graph.StreamOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(g, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				o.GraphFile = g
			}
			r, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			var js, text bytes.Buffer
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteText(&text, true); err != nil {
				t.Fatal(err)
			}
			// the temporary directory is not part of the report's meaning
			got := map[string][]byte{
				".json": bytes.ReplaceAll(js.Bytes(), []byte(dir), []byte("DIR")),
				".txt":  bytes.ReplaceAll(text.Bytes(), []byte(dir), []byte("DIR")),
			}
			for _, ext := range []string{".json", ".txt"} {
				key := c.name + ext
				sum := sha256.Sum256(got[ext])
				h := hex.EncodeToString(sum[:])
				if *updateScaleGolden {
					newGolden[key] = h
					continue
				}
				if want := golden[key]; h != want {
					keep := filepath.Join(os.TempDir(), "scale-golden-"+key)
					os.WriteFile(keep, got[ext], 0o644)
					t.Errorf("%s: sha256 %s, want %s (the report is in %s)", key, h, want, keep)
				}
			}
		})
	}
	if *updateScaleGolden {
		var b strings.Builder
		keys := make([]string, 0, len(newGolden))
		for k := range newGolden {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %s\n", newGolden[k], k)
		}
		if err := os.WriteFile(scaleGoldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readScaleGolden reads the "sha256 name" lines of scaleGoldenFile.
func readScaleGolden(t *testing.T) map[string]string {
	m := map[string]string{}
	if *updateScaleGolden {
		return m
	}
	b, err := os.ReadFile(scaleGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		h, k, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", scaleGoldenFile, l)
		}
		m[k] = h
	}
	return m
}
