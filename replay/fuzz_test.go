package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// FuzzRemove: any --remove values resolve to removable nodes or give a
// usage error with a hint; never a panic.
func FuzzRemove(f *testing.F) {
	e, err := NewEngine(sessionGraph(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"e6", s1 + "/call/e6", s1 + "/agent", "", "urn:", "e6\ne10", s1 + "/tool/delete_file\n" + s1 + "/args/e3", "é\x00\xff", "/", "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		reqs := strings.Split(in, "\n")
		r, err := e.Counterfactual(Options{Remove: reqs})
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage || exitcode.HintOf(err) == "" {
				t.Fatalf("%q: %v (code %v, hint %q)", in, err, exitcode.Of(err), exitcode.HintOf(err))
			}
			return
		}
		if len(r.Removed) != len(reqs) {
			t.Fatalf("%q: %d removed", in, len(r.Removed))
		}
		for _, x := range r.Removed {
			if !r.removes(x.Node) || (x.Kind != "activity" && x.Kind != "entity") {
				t.Fatalf("%q: removed %+v", in, x)
			}
		}
		if r.SynergyResidual < 0 || r.SynergyResidual > 1 {
			t.Fatalf("residual %v", r.SynergyResidual)
		}
	})
}

// FuzzReplayGraph: any bytes read as a graph document either fail to read
// (graph.ReadJSONLD, exit code tampered) or give a ranking and a
// counterfactual whose invariants hold.
func FuzzReplayGraph(f *testing.F) {
	// Small seeds keep each run short, so the fuzzer's minimisation of
	// interesting inputs stays fast.
	f.Add([]byte(`{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:d","@type":["prov:Activity","witness:ToolCall"],"otel:gen_ai.tool.name":"rm","prov:used":[{"@id":"urn:x:t"}]},{"@id":"urn:x:e","@type":["prov:Entity","witness:ExternalEffect"],"prov:wasGeneratedBy":{"@id":"urn:x:d"},"witness:effectOp":"delete"},{"@id":"urn:x:t","@type":["prov:Entity","witness:ToolDefinition"],"witness:annotations":"{\"destructiveHint\":true}"}]}`))
	f.Add([]byte(`{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:a","@type":"prov:Activity"},{"@id":"urn:x:b","@type":"prov:Entity","prov:wasGeneratedBy":{"@id":"urn:x:a"}},{"@id":"urn:x:a2","@type":"prov:Activity","prov:used":{"@id":"urn:x:b"},"prov:wasInformedBy":{"@id":"urn:x:a"}}]}`))
	f.Add([]byte(`{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:a","@type":"prov:Activity","prov:wasInformedBy":{"@id":"urn:x:a"}}]}`))
	f.Add([]byte(`{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:c","@type":"prov:Activity"},{"@id":"urn:x:c2","@type":"prov:Activity"},{"@id":"urn:x:r","@type":"prov:Activity","witness:duringCandidate":[{"@id":"urn:x:c"},{"@id":"urn:x:c2"}]},{"@id":"urn:x:u","@type":"prov:Entity","prov:wasGeneratedBy":{"@id":"urn:x:r"}},{"@id":"urn:x:o","@type":"prov:Entity","prov:wasGeneratedBy":{"@id":"urn:x:c"},"witness:possiblyInfluencedBy":{"@id":"urn:x:u"},"prov:wasInfluencedBy":{"@id":"urn:x:o"}}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graph.ReadJSONLD(bytes.NewReader(data), "fuzz.jsonld")
		if err != nil {
			if exitcode.Of(err) != exitcode.Tampered {
				t.Fatalf("read error with code %v: %v", exitcode.Of(err), err)
			}
			return
		}
		e, err := NewEngine(g)
		if err != nil {
			return // duplicate ids, reported as tampered
		}
		rk := e.Rank(3)
		for _, x := range rk.Ranking {
			if x.CompensationSize < 1 || x.CompensationActivities < 1 || x.SynergyResidual < 0 || x.SynergyResidual > 1 {
				t.Fatalf("rank entry %+v", x)
			}
			r, err := e.Counterfactual(Options{Remove: []string{x.Activity}})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(r.CompensationSet)) != x.CompensationSize || int64(r.CompensationActions) != x.CompensationActivities || int64(len(r.NotReplayable)) != x.NotReplayable {
				t.Fatalf("rank %+v disagrees with counterfactual (%d, %d, %d)", x, len(r.CompensationSet), r.CompensationActions, len(r.NotReplayable))
			}
			for _, a := range r.Ambiguous {
				if r.removes(a.Node) || len(a.On) == 0 {
					t.Fatalf("ambiguous %+v", a)
				}
			}
			for _, m := range r.PossiblyRemoved {
				if r.removes(m.Node) || m.Via == nil {
					t.Fatalf("possibly removed %+v", m)
				}
			}
			var out bytes.Buffer
			if err := WriteJSON(&out, r); err != nil {
				t.Fatal(err)
			}
			if err := e.WriteDOT(&out, r); err != nil {
				t.Fatal(err)
			}
		}
	})
}
