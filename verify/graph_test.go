package verify

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
)

func graphOf(t testing.TB, data []byte, opts graph.Options) []byte {
	t.Helper()
	g, err := graph.Build(eventlog.NewReader(bytes.NewReader(data), "events.jsonl"), opts)
	if err != nil {
		t.Fatalf("graph.Build: %v", err)
	}
	var b bytes.Buffer
	if err := g.WriteJSONLD(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func runGraph(t testing.TB, plan Plan, doc []byte) *Report {
	t.Helper()
	r := &Report{}
	if err := CheckGraph(r, plan, "graph.jsonld", bytes.NewReader(doc)); err != nil {
		t.Fatalf("CheckGraph: %v", err)
	}
	r.Finish()
	return r
}

// The graph path finds what the events path finds, except the chain, which
// it reports as not checkable, and it records the graph digest.
func TestGraphMatchesEvents(t *testing.T) {
	plan := testPlan()
	scenarios := map[string]func([]*eventlog.Event) []*eventlog.Event{
		"clean": func(e []*eventlog.Event) []*eventlog.Event { return e },
		"unsealed": func(e []*eventlog.Event) []*eventlog.Event {
			return append(e, ev(eventlog.KindToolCall, "delete_file", `"d1"`, map[string]any{"target": "/data/secret.txt"}))
		},
		"traversal": func(e []*eventlog.Event) []*eventlog.Event {
			return append(e, ev(eventlog.KindToolCall, "read_file", "42", map[string]any{"path": "/data/../etc/passwd"}))
		},
		"prompt": func(e []*eventlog.Event) []*eventlog.Event {
			sys := ev(eventlog.KindModelInput, "", "", "another prompt")
			sys.Role = "system"
			return append([]*eventlog.Event{sys}, e[1:]...)
		},
		"effect": func(e []*eventlog.Event) []*eventlog.Event {
			x := ev(eventlog.KindExternalEffect, "read_file", "", nil)
			x.Call = "e2"
			x.Effect = &eventlog.Effect{Op: "delete", Target: "/data/report.txt"}
			return append(e, x)
		},
	}
	for name, mut := range scenarios {
		t.Run(name, func(t *testing.T) {
			data := buildLog(t, plan, logSpec{events: mut(cleanEvents()), signer: testKey})
			er := runCheck(t, plan, data, signedOpts())
			gr := runGraph(t, plan, graphOf(t, data, graph.Options{}))
			if er.Verdict != gr.Verdict {
				t.Errorf("events verdict %s, graph verdict %s", er.Verdict, gr.Verdict)
			}
			key := func(r *Report) string {
				var parts []string
				for _, f := range r.Findings {
					if f.Check == checkChain {
						continue
					}
					parts = append(parts, f.Code+"|"+f.EventID+"|"+string(f.RPCID)+"|"+f.SealClause+"|"+f.Message)
				}
				sort.Strings(parts) // the graph has no lines, so findings sort otherwise
				return strings.Join(parts, "\n")
			}
			if key(er) != key(gr) {
				t.Errorf("findings differ\nevents:\n%s\ngraph:\n%s", key(er), key(gr))
			}
			if len(gr.Evidence.GraphDigest) != 64 {
				t.Errorf("graph digest %q", gr.Evidence.GraphDigest)
			}
			nc := findCode(gr, "not-checkable")
			if nc == nil || nc.Check != checkChain {
				t.Errorf("no chain not-checkable notice: %+v", gr.Findings)
			}
		})
	}
}

func TestGraphWithoutPayloads(t *testing.T) {
	plan := testPlan()
	evs := append(cleanEvents(), ev(eventlog.KindToolCall, "read_file", "42", map[string]any{"path": "/etc/passwd"}))
	data := buildLog(t, plan, logSpec{events: evs, signer: testKey})
	r := runGraph(t, plan, graphOf(t, data, graph.Options{OmitPayloads: true}))
	if findCode(r, "argument-out-of-scope") != nil {
		t.Error("scope judged without payloads")
	}
	if f := findCode(r, "scope-not-checkable"); f == nil || !strings.Contains(f.Message, "without recorded arguments") {
		t.Errorf("no scope-not-checkable notice: %+v", r.Findings)
	}
}

func TestGraphInvalid(t *testing.T) {
	r := runGraph(t, testPlan(), []byte(`{"@context":{},"@graph":[{"@id":"_:b0"}]}`))
	if r.Verdict != Tampered || findCode(r, "graph-invalid") == nil {
		t.Fatalf("verdict %s, findings %+v", r.Verdict, r.Findings)
	}
}

// With GraphDigest, the events path records the digest 'witness graph
// --events FILE --seal SEAL' gives: the sha256 of the canonical N-Quads of
// the log with the seal as plan.
func TestEventsGraphDigest(t *testing.T) {
	plan := testPlan()
	data := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	g, err := graph.Build(eventlog.NewReader(bytes.NewReader(data), "events.jsonl"),
		graph.Options{Seal: &eventlog.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.WriteNQuads(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts := signedOpts()
	opts.GraphDigest = true
	for i := 0; i < 3; i++ {
		r := &Report{}
		if err := checkEvents(r, plan, "events.jsonl", bytes.NewReader(data), opts); err != nil {
			t.Fatal(err)
		}
		r.Finish()
		if r.Evidence.GraphDigest != want || r.Verdict != verified {
			t.Fatalf("digest %q, want %q (verdict %s)", r.Evidence.GraphDigest, want, r.Verdict)
		}
		if !strings.Contains(r.VerdictLine(), "; graph sha256:"+want) {
			t.Errorf("verdict line %q", r.VerdictLine())
		}
	}
	// a log that is not a graph: no digest, same verdict as without
	r := &Report{}
	if err := checkEvents(r, plan, "events.jsonl", bytes.NewReader([]byte("{not json\n")), opts); err != nil {
		t.Fatal(err)
	}
	r.Finish()
	if r.Evidence.GraphDigest != "" || r.Verdict != Tampered {
		t.Errorf("garbage: digest %q verdict %s", r.Evidence.GraphDigest, r.Verdict)
	}
}
