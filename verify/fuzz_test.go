package verify

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

func validVerdict(v Verdict) bool {
	switch v {
	case verified, Violation, Incomplete, Tampered:
		return true
	}
	return false
}

// FuzzCheckEvents: any bytes as an event log give a report with a valid
// verdict, the same one twice, and every format renders; nothing panics.
func FuzzCheckEvents(f *testing.F) {
	plan := testPlan()
	clean := buildLog(f, plan, logSpec{events: cleanEvents(), signer: testKey})
	f.Add(clean)
	f.Add(clean[:len(clean)/2])
	f.Add(buildLog(f, plan, logSpec{events: append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", "1", map[string]any{"paths": []any{"/a", "file:///b"}}))}))
	f.Add(buildLog(f, plan, logSpec{events: cleanEvents(), signer: testKey, failure: "recording abandoned"}))
	f.Add(buildLog(f, plan, logSpec{events: cleanEvents(), signer: testKey, reason: "2 tool call(s) without a response; server exit status 3"}))
	for _, p := range []any{map[string]any{"upstream_session_id": "s-1", "client_session_id": "s-1-witness-1", "exchange": 3, "sessions": []string{"mcp/1", "mcp/2"}, "split": true}, "x", nil} {
		n := ev(eventlog.KindNotification, "", "", p)
		n.Method = eventlog.MethodSessionIDCollision
		f.Add(buildLog(f, plan, logSpec{events: append(cleanEvents(), n), signer: testKey}))
	}
	f.Add([]byte("{}\n"))
	f.Add([]byte(""))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		run := func() *Report {
			r := &Report{}
			if err := checkEvents(r, plan, "events.jsonl", bytes.NewReader(data), eventOptions{EndVerifier: testKey}); err != nil {
				t.Fatalf("CheckEvents: %v", err)
			}
			r.Finish()
			return r
		}
		a, b := run(), run()
		if !validVerdict(a.Verdict) || a.Verdict != b.Verdict {
			t.Fatalf("verdicts %q %q", a.Verdict, b.Verdict)
		}
		for _, format := range []string{"text", "json", "sarif", "junit"} {
			if !bytes.Equal(render(t, a, format), render(t, b, format)) {
				t.Fatalf("%s output differs between runs", format)
			}
		}
		if len(data) > 0 && a.Verdict == verified && !bytes.Equal(data, clean) && !bytes.HasSuffix(data, []byte("\n")) {
			t.Fatalf("a log without a final newline verified")
		}
		if a.Verdict == verified && findCode(a, "session-id-collision") != nil {
			t.Fatalf("a log that records a session id collision verified")
		}
		if a.Verdict == verified && len(a.Evidence.Failures) > 0 {
			t.Fatalf("a log whose end records a failure verified: %+v", a.Evidence.Failures)
		}
	})
}

// FuzzCheckGraph: any bytes as a graph document give a valid verdict.
func FuzzCheckGraph(f *testing.F) {
	plan := testPlan()
	data := buildLog(f, plan, logSpec{events: cleanEvents(), signer: testKey})
	g, err := graph.Build(eventlog.NewReader(bytes.NewReader(data), "events.jsonl"), graph.Options{})
	if err != nil {
		f.Fatal(err)
	}
	var doc bytes.Buffer
	if err := g.WriteJSONLD(&doc); err != nil {
		f.Fatal(err)
	}
	f.Add(doc.Bytes())
	f.Add([]byte(`{"@context":{},"@graph":[]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &Report{}
		if err := CheckGraph(r, plan, "graph.jsonld", bytes.NewReader(data)); err != nil {
			return // an operational error (the canonical writer), reported to the user
		}
		r.Finish()
		if !validVerdict(r.Verdict) {
			t.Fatalf("verdict %q", r.Verdict)
		}
		render(t, r, "sarif")
	})
}

// FuzzSniffKind: the file-kind sniffer never panics, and a kind it names
// is stable when more bytes follow the first value (it reads the first
// JSON value only).
func FuzzSniffKind(f *testing.F) {
	f.Add([]byte(`{"format":"witness-cassette","v":1}`))
	f.Add([]byte(`{"header":{"format":"witness-events"},"id":"e0","kind":"session_start","prev":"00","seq":0}`))
	f.Add([]byte(`{"payload":"e30","payloadType":"application/vnd.in-toto+json","signatures":[]}`))
	f.Add([]byte(`{"@context":{},"@graph":[]}`))
	f.Add([]byte(`{"tools":[{"name":"a"}],"signature":"x","witness_id":"w"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k := sniffKind(data)
		if k != kindUnknown && sniffKind(append(append([]byte(nil), data...), "\n{}\n"...)) != k {
			t.Fatalf("kind %q changes when a line follows", k)
		}
	})
}

// FuzzInjectionJoin: two logs whatever their bytes, joined, judged for
// injection-provenance through ambiguous joins: never a panic; the graph
// read back from its JSON-LD (the --graph path) gives the same
// injection findings as the graph in memory; an action is reported at
// most once, and an ambiguous one is never a notice (never verified).
func FuzzInjectionJoin(f *testing.F) {
	for _, mk := range []func(string) ([]byte, []byte){synthlog.InjectionRun, synthlog.InjectionRunTwice, synthlog.InjectionRunMixed} {
		model, mcp := mk(joinTS)
		f.Add(model, mcp)
	}
	plan := joinPlan
	plan.Untrusted = []string{"tool:read_text_file:read:/work/inbox/**"}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		run, err := graph.BuildRun([]graph.LogInput{{Name: "model/events.jsonl", Data: a}, {Name: "fs/events.jsonl", Data: b}}, graph.Options{})
		if err != nil {
			return
		}
		var doc bytes.Buffer
		if err := run.Graph.WriteJSONLD(&doc); err != nil {
			return
		}
		back, err := graph.ReadJSONLD(bytes.NewReader(doc.Bytes()), "g.jsonld")
		if err != nil {
			t.Fatalf("a written graph does not read back: %v", err)
		}
		r1, r2 := &Report{}, &Report{}
		checkRun(r1, plan, run.Graph, run.Logs)
		checkRun(r2, plan, back, nil)
		x, y := injectionDigest(r1), injectionDigest(r2)
		if x != y {
			t.Fatalf("in memory:\n%s\nread back:\n%s", x, y)
		}
		seen := map[string]bool{}
		for _, fd := range r1.Findings {
			if fd.Check != CheckInjection {
				continue
			}
			if seen[fd.File+fd.EventID] || fd.Class != classViolation {
				t.Fatalf("finding %+v (seen %v)", fd, seen[fd.File+fd.EventID])
			}
			seen[fd.File+fd.EventID] = true
		}
	})
}

// injectionDigest is the injection findings of r, one line each, without
// the file names (a graph read back names its logs by LOGNAME only).
func injectionDigest(r *Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		if f.Check == CheckInjection {
			fmt.Fprintf(&b, "%s %s %s %s %q\n", f.Code, f.EventID, f.SealClause, f.Message, f.Chain)
		}
	}
	return b.String()
}
