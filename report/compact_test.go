package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/verify"
)

// TestCompactSameAsInMemory: the compact path (the streamed graph's
// projections) gives the page the in-memory graph gives, on the fixture,
// a cut log, the demo's agent logs one by one, the injection run's logs
// and synthetic logs judged against the fixture's seal, which leaves their tools out (findings
// with chains and counterfactuals).
func TestCompactSameAsInMemory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string { return writeTestFile(t, dir, name, b) }
	fx := fixtureOptions(t)
	raw, err := os.ReadFile(fx.Events[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := fx
	cut.Events = []string{write("cut.jsonl", raw[:len(raw)*2/3])}
	cases := map[string]Options{"fixture": fx, "cut": cut}
	// without a seal the report's graph stream gives the verdict's graph
	// digest (verify.Options.NoGraphDigest): a whole log, a cut one (no
	// digest) and one with a line that is not an event (no digest)
	noSeal := verify.Options{AllowUnsigned: true}
	cases["fixture-noseal"] = Options{Events: fx.Events, Verify: noSeal}
	cases["cut-noseal"] = Options{Events: cut.Events, Verify: noSeal}
	nl := bytes.IndexByte(raw[len(raw)/2:], '\n') + len(raw)/2 + 1
	bad := append(append(append([]byte(nil), raw[:nl]...), "{\"not\":\"an event\"}\n"...), raw[nl:]...)
	cases["badline-noseal"] = Options{Events: []string{write("bad.jsonl", bad)}, Verify: noSeal}
	for _, ch := range []string{"model", "fs", "everything"} {
		cases["agent-"+ch] = Options{Events: []string{filepath.Join("..", "testdata", "demo", "agent", "openai-agents", ch, "events.jsonl")}, Verify: verify.Options{AllowUnsigned: true}}
	}
	model, mcp := synthlog.InjectionRun("2026-08-30T14:33:00+00:00")
	cases["injection-model"] = Options{Events: []string{write("model.jsonl", model)}, Verify: verify.Options{AllowUnsigned: true}}
	cases["injection-mcp"] = Options{Events: []string{write("mcp.jsonl", mcp)}, Verify: verify.Options{AllowUnsigned: true}}
	for _, n := range []int{40, 3000} {
		var b bytes.Buffer
		if err := synthlog.Generate(&b, n, uint64(n), "compact"); err != nil {
			t.Fatal(err)
		}
		p := write(filepath.Base(t.Name())+string(rune('a'+len(cases)))+".jsonl", b.Bytes())
		cases["synth-"+string(rune('0'+len(cases)))] = Options{Events: []string{p}, Verify: fx.Verify, MaxGraphNodes: 200, MaxDetails: 50}
	}
	chains, digests, none, sealed := 0, 0, 0, 0
	for name, o := range cases {
		o.Generated = "2026-08-30T14:33:00+00:00"
		o.CompactAbove = 1 << 30
		mem, err := Build(o)
		if err != nil {
			t.Fatalf("%s: in memory: %v", name, err)
		}
		o.CompactAbove = -1
		cmp, err := Build(o)
		if err != nil {
			t.Fatalf("%s: compact: %v", name, err)
		}
		a, _ := json.Marshal(mem)
		b, _ := json.Marshal(cmp)
		if !bytes.Equal(a, b) {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			lo := max(i-200, 0)
			t.Errorf("%s: compact differs at byte %d:\n in memory: %s\n compact:   %s", name, i, a[lo:min(i+200, len(a))], b[lo:min(i+200, len(b))])
		}
		for _, f := range mem.Findings {
			if f.Chain != nil {
				chains++
			}
		}
		// the verdict is verify's, graph digest included (or left out)
		// exactly as verify.Run gives it
		vo := o.Verify
		vo.EventsFile = o.Events[0]
		rep, err := verify.Run(vo)
		if err != nil {
			t.Fatalf("%s: verify: %v", name, err)
		}
		if cmp.Verdict.Line != rep.VerdictLine() || cmp.Logs[0].Line != rep.VerdictLine() {
			t.Errorf("%s: verdict line\n compact: %s\n verify:  %s", name, cmp.Verdict.Line, rep.VerdictLine())
		}
		if rep.Evidence.GraphDigest != "" {
			digests++
			if o.Verify.SealFile != "" {
				// with a seal the report's stream has the seal as its
				// plan, and the digest is still verify's
				sealed++
			}
		} else {
			none++
		}
		// a log the stream starts on (its size) but that is too short
		// to be reported compactly: the stream is canceled and the digest
		// computed on its own
		o.CompactAbove = mem.Logs[0].Events
		if !compactLikely(o.Events[0], o) {
			continue
		}
		few, err := Build(o)
		if err != nil {
			t.Fatalf("%s: canceled stream: %v", name, err)
		}
		if c, _ := json.Marshal(few); !bytes.Equal(a, c) {
			t.Errorf("%s: canceled stream: the page differs from the in-memory one", name)
		}
	}
	if chains == 0 {
		t.Error("no finding with a chain: the comparison shows nothing about chains")
	}
	if sealed == 0 {
		t.Error("no sealed verdict with a graph digest: the comparison shows nothing about the sealed stream")
	}
	if digests == 0 || none == 0 {
		t.Errorf("%d verdicts with a graph digest, %d without: the comparison shows nothing about one of them", digests, none)
	}
}

// TestReread: the events of the embedded details are the log's, whether
// the first pass kept them or they are read again.
func TestReread(t *testing.T) {
	var b bytes.Buffer
	if err := synthlog.Generate(&b, 300, 3, "reread"); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []int{0, 1, 7, 150, 151, 299}
	all, err := reread(p, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int]*eventlog.Event{1: all[1].ev, 150: all[3].ev}
	mixed, err := reread(p, rows, kept)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if want := fmt.Sprintf("e%d", r); all[i].ev.ID != want || mixed[i].ev.ID != want {
			t.Errorf("row %d: read %s, mixed %s, want %s", r, all[i].ev.ID, mixed[i].ev.ID, want)
		}
	}
	if _, err := reread(p, []int{300}, nil); err == nil {
		t.Error("a row past the log's end: no error")
	}
}

// TestThinNodeProjects: the thin copy of a view (thinNode) projects as the
// view's whole node does when no label is made, for every node of a
// generated log's graph stream, whatever its kind.
func TestThinNodeProjects(t *testing.T) {
	var b bytes.Buffer
	if err := synthlog.Generate(&b, 2000, 7, "thin"); err != nil {
		t.Fatal(err)
	}
	classes := map[[2]any]string{{0, "e3"}: "tampered", {0, "e10"}: "violation"}
	pr := projection{
		// every event of a row but a few, so that both cases are met
		rowOf: func(_ int, ev string) (int, bool) {
			r, ok := rowOfID(ev)
			return r, ok && r%7 != 3
		},
		classes: classes,
		laneAt:  func(_ int, ev string, row int) int { return (row + len(ev)) % 5 },
		rels:    graph.CausalRelations(),
	}
	causal := causalPreds()
	drawn := 0
	_, err := graph.StreamViews(graph.NewEventSource(&b, "thin.jsonl"), graph.Options{}, graph.StreamOptions{}, func(v *graph.NodeView) error {
		got, gok := projectNode(thinNode(v, causal), 0, pr, false)
		want, wok := projectNode(v.Node(), 0, pr, false)
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("node %s: thin %v %+v, whole %v %+v", v.ID, gok, got, wok, want)
		}
		if wok {
			drawn++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if drawn < 1000 {
		t.Fatalf("only %d nodes drawn: the test compares too little", drawn)
	}
}

// writeTestFile writes b to dir/name and returns the path.
func writeTestFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
