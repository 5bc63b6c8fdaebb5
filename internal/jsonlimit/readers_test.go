package jsonlimit_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/firewall"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/proxy"
	"github.com/agent-trace-witness/witness/seal"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reader is one JSON reader of witness, fed doc as the whole file (or, for
// a JSON-lines reader, as one line) named file.
type reader struct {
	name string
	file string
	read func(t *testing.T, doc []byte, file string) error
}

// readerLine is the file line the document is on when it is not line 1.
var readerLine = map[string]int{"cassette record": 2}

// cassetteHeader is a valid cassette header line, so that the deep document
// is read as a record.
const cassetteHeader = `{"format":"witness-cassette","v":1,"command":"x","args":[],"env":[],"started":"2026-08-30T14:33:00+00:00","frozen":true,"mode":"proxy"}` + "\n"

// readers lists every JSON reader at its one entry point.
var readers = []reader{
	{"seal", "seal.json", func(t *testing.T, doc []byte, file string) error { _, err := seal.Parse(doc, file); return err }},
	{"agent spec", "agent.json", func(t *testing.T, doc []byte, file string) error {
		_, err := seal.ParseSpec(doc, file, nil)
		return err
	}},
	{"DSSE envelope", "seal.intoto.jsonl", func(t *testing.T, doc []byte, file string) error {
		_, err := seal.VerifyEnvelope(doc, file, nil)
		return err
	}},
	{"keyring", "keys.json", func(t *testing.T, doc []byte, file string) error { _, err := keyring.Parse(doc, file); return err }},
	{"trust file", "trust.json", func(t *testing.T, doc []byte, file string) error { _, err := keyring.ParseTrust(doc, file); return err }},
	{"scenario", "scenario.json", func(t *testing.T, doc []byte, file string) error {
		_, _, err := capture.ParseScenario(doc, file)
		return err
	}},
	{"effects mapping", "effects.json", func(t *testing.T, doc []byte, file string) error {
		_, err := proxy.ParseEffects(doc, file)
		return err
	}},
	{"message mapping", "mapping.json", func(t *testing.T, doc []byte, file string) error {
		_, err := firewall.DecodeMapping(doc, file)
		return err
	}},
	{"message policy", "policy.json", func(t *testing.T, doc []byte, file string) error {
		_, err := firewall.DecodePolicy(doc, file)
		return err
	}},
	{"firewall audit", "audit.ndjson", func(t *testing.T, doc []byte, file string) error {
		v, err := firewall.VerifyAudit(bytes.NewReader(line(doc)), file, nil)
		if err != nil {
			return err
		}
		return v.Err()
	}},
	{"recorded judgments", "audit.ndjson", func(t *testing.T, doc []byte, file string) error {
		p := filepath.Join(t.TempDir(), file)
		if err := os.WriteFile(p, line(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := firewall.LoadJudgments(p)
		return err
	}},
	{"audit overlay", "audit.ndjson", func(t *testing.T, doc []byte, file string) error {
		_, err := firewall.AddAuditOverlay(graph.New(), bytes.NewReader(line(doc)), file)
		return err
	}},
	{"event log", "events.jsonl", func(t *testing.T, doc []byte, file string) error {
		_, err := eventlog.NewReader(bytes.NewReader(line(doc)), file).Next()
		return err
	}},
	{"event log verification", "events.jsonl", func(t *testing.T, doc []byte, file string) error {
		rep, err := eventlog.VerifyLog(bytes.NewReader(line(doc)), file, eventlog.VerifyLogOptions{})
		for _, f := range rep.Findings {
			if strings.Contains(f.Message, "nesting deeper") {
				return errors.New(file + ": " + f.Message)
			}
		}
		if err == nil {
			err = errors.New("no finding")
		}
		return err
	}},
	{"graph event source", "events.jsonl", func(t *testing.T, doc []byte, file string) error {
		_, err := graph.Build(graph.NewEventSource(bytes.NewReader(line(doc)), file), graph.Options{})
		return err
	}},
	{"graph JSON-LD", "graph.jsonld", func(t *testing.T, doc []byte, file string) error {
		_, err := graph.ReadJSONLD(bytes.NewReader(doc), file)
		return err
	}},
	{"cassette header", "cassette.jsonl", func(t *testing.T, doc []byte, file string) error {
		_, err := cassette.NewReader(bytes.NewReader(line(doc)), file)
		return err
	}},
	{"cassette record", "cassette.jsonl", func(t *testing.T, doc []byte, file string) error {
		cr, err := cassette.NewReader(strings.NewReader(cassetteHeader+string(line(doc))), file)
		if err != nil {
			t.Fatalf("header: %v", err)
		}
		_, err = cr.Next()
		return err
	}},
	{"0.1.0 import", "legacy.jsonl", func(t *testing.T, doc []byte, file string) error {
		_, err := derive.ImportATW(bytes.NewReader(line(doc)), io.Discard, derive.ImportOptions{Name: file, TS: "2026-08-30T14:33:00+00:00"})
		return err
	}},
	{"reported events (capture append)", "stdin", func(t *testing.T, doc []byte, file string) error {
		_, err := derive.ParseAppendInput(doc)
		return err
	}},
}

func line(doc []byte) []byte { return append(append([]byte(nil), doc...), '\n') }

// TestEveryReaderRefusesAMillionLevels feeds each reader a 2 MB document
// nested a million levels deep: each must refuse it with the nesting error
// of the one shared limit, naming the file, line and column where it was
// crossed. The time is logged, never asserted. A document nested exactly
// MaxDepth levels must not be refused for its depth.
func TestEveryReaderRefusesAMillionLevels(t *testing.T) {
	const levels = 1_000_000
	deep := append(bytes.Repeat([]byte("["), levels), bytes.Repeat([]byte("]"), levels)...)
	atLimit := append(bytes.Repeat([]byte("["), jsonlimit.MaxDepth), bytes.Repeat([]byte("]"), jsonlimit.MaxDepth)...)
	// the column, then (for audit verdicts, after the reason code) the message
	wantPos := regexp.MustCompile(fmt.Sprintf(`:%d: ([a-z-]+: )?nesting deeper than %d levels`, jsonlimit.MaxDepth+1, jsonlimit.MaxDepth))
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			start := time.Now()
			err := r.read(t, deep, r.file)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("a document nested %d levels was accepted", levels)
			}
			msg := err.Error()
			if !wantPos.MatchString(msg) {
				t.Fatalf("error %q does not report the nesting limit at column %d", msg, jsonlimit.MaxDepth+1)
			}
			ln := max(readerLine[r.name], 1)
			if r.file != "stdin" && !strings.Contains(msg, fmt.Sprintf("%s:%d:", r.file, ln)) {
				t.Errorf("error %q does not name %s, line %d", msg, r.file, ln)
			}
			var le *jsonlimit.Error
			if errors.As(err, &le) && (le.Col != jsonlimit.MaxDepth+1 || le.Depth != jsonlimit.MaxDepth+1) {
				t.Errorf("jsonlimit.Error at column %d, depth %d", le.Col, le.Depth)
			}
			t.Logf("refused %d bytes in %v: %s", len(deep), elapsed, firstLine(msg))

			if err := r.read(t, atLimit, r.file); err != nil && strings.Contains(err.Error(), "nesting deeper") {
				t.Errorf("a document nested exactly %d levels was refused for its depth: %v", jsonlimit.MaxDepth, err)
			}
		})
	}
}

// TestLineReadersNameTheFileLine checks that a JSON-lines reader places the
// nesting error on the line of the file, not of the document.
func TestLineReadersNameTheFileLine(t *testing.T) {
	deep := bytes.Repeat([]byte(`{"a":`), jsonlimit.MaxDepth+1)
	log := append([]byte(cassetteHeader), append(deep, '\n')...)
	_, err := cassette.NewReader(bytes.NewReader(log), "c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := cassette.NewReader(bytes.NewReader(log), "c.jsonl")
	_, err = cr.Next()
	want := fmt.Sprintf("c.jsonl:2:%d: nesting deeper than %d levels", 5*jsonlimit.MaxDepth+1, jsonlimit.MaxDepth)
	if err == nil || err.Error() != want {
		t.Errorf("cassette: %v, want %s", err, want)
	}
	rd := eventlog.NewReader(bytes.NewReader(append([]byte("{}\n"), append(deep, '\n')...)), "e.jsonl")
	rd.Next()
	_, err = rd.Next()
	want = strings.Replace(want, "c.jsonl", "e.jsonl", 1)
	if err == nil || err.Error() != want {
		t.Errorf("events: %v, want %s", err, want)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
