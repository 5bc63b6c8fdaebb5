package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the evidence cannot prove (issue 9, items 4 and 9): a recorded
// failure, events imported rather than observed, a graph without its log.

// textOf renders the text report.
func reportText(t testing.TB, r *Report) string {
	t.Helper()
	return string(render(t, r, "text"))
}

func verdictLineOf(t testing.TB, r *Report) string {
	t.Helper()
	ls := strings.Split(strings.TrimSuffix(reportText(t, r), "\n"), "\n")
	return ls[len(ls)-1]
}

// A session_end that records a failure makes the log at best incomplete,
// with the reason in every output; a violation before the failure is still
// listed, and the exit stays 4.
func TestRecordedFailure(t *testing.T) {
	plan := testPlan()
	const why = "recording fell too far behind the wire and was abandoned"

	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey, failure: why})
	r := runCheck(t, plan, clean, signedOpts())
	if r.Verdict != Incomplete || r.Code() != exitcode.Incomplete {
		t.Fatalf("verdict %s, want incomplete:\n%s", r.Verdict, reportText(t, r))
	}
	f := findCode(r, "log-failure")
	if f == nil || f.Class != classIncomplete || f.Severity != SevError || f.EventID != "e8" || f.Line != 9 || !strings.Contains(f.Message, why) {
		t.Fatalf("log-failure finding %+v", f)
	}
	if len(r.Evidence.Failures) != 1 || r.Evidence.Failures[0].Failure != why || r.Evidence.Failures[0].FromReason {
		t.Errorf("evidence failures %+v", r.Evidence.Failures)
	}
	if vl := verdictLineOf(t, r); !strings.HasPrefix(vl, "verdict: incomplete (exit 4): 1 error, 0 warnings, 4 notices; recording failed: "+why) {
		t.Errorf("verdict line %q", vl)
	}
	// JSON, SARIF and JUnit carry it too
	var js struct {
		Evidence   Evidence `json:"evidence"`
		Qualifiers []string `json:"qualifiers"`
	}
	if err := json.Unmarshal(render(t, r, "json"), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Evidence.Failures) != 1 || js.Evidence.Failures[0].Failure != why || len(js.Qualifiers) != 1 || js.Qualifiers[0] != "recording failed: "+why {
		t.Errorf("json: %+v %q", js.Evidence.Failures, js.Qualifiers)
	}
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
			Properties map[string]any `json:"properties"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(render(t, r, "sarif"), &sarif); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, res := range sarif.Runs[0].Results {
		found = found || res.RuleID == "log-failure"
	}
	if !found || sarif.Runs[0].Properties["failures"] == nil || sarif.Runs[0].Properties["verdict"] != "incomplete" {
		t.Errorf("sarif: results %+v properties %v", sarif.Runs[0].Results, sarif.Runs[0].Properties)
	}
	ju := string(render(t, r, "junit"))
	if !strings.Contains(ju, `<property name="failure" value="e8: `+why+`">`) || !strings.Contains(ju, `<failure message="1 finding (incomplete)" type="incomplete">`) {
		t.Errorf("junit:\n%s", ju)
	}

	// A violation in the intact events before the failure: both are
	// reported; incomplete is the floor, so the exit is 4.
	bad := append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", `"d1"`, map[string]any{"target": "/data/secret.txt"}))
	r = runCheck(t, plan, buildLog(t, plan, logSpec{events: bad, signer: testKey, failure: why}), signedOpts())
	if r.Verdict != Incomplete || findCode(r, "unsealed-tool") == nil || findCode(r, "log-failure") == nil {
		t.Fatalf("violation before a failure: verdict %s\n%s", r.Verdict, reportText(t, r))
	}
	if vl := verdictLineOf(t, r); !strings.Contains(vl, "; recording failed: "+why+"; also violation: 1 finding") {
		t.Errorf("verdict line %q", vl)
	}

	// An old log: the failure is in the reason only.
	old := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey, reason: "1 tool call(s) without a response; server exit status 3"})
	r = runCheck(t, plan, old, signedOpts())
	if r.Verdict != Incomplete || len(r.Evidence.Failures) != 1 || !r.Evidence.Failures[0].FromReason {
		t.Fatalf("old failed log: %s %+v", r.Verdict, r.Evidence.Failures)
	}
	// and a reason that is not a failure changes nothing
	r = runCheck(t, plan, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey, reason: "completed; server exit 0"}), signedOpts())
	if r.Verdict != verified || len(r.Evidence.Failures) != 0 || len(r.Qualifiers) != 0 {
		t.Fatalf("completed log: %s\n%s", r.Verdict, reportText(t, r))
	}

	// Removing the failure from the signed end is tampering: the end's
	// signature covers it.
	forged := bytes.Replace(clean, []byte(`"failure":"`+why+`",`), nil, 1)
	if bytes.Equal(forged, clean) {
		t.Fatal("the forgery changed nothing")
	}
	r = runCheck(t, plan, forged, signedOpts())
	if r.Verdict != Tampered || findCode(r, "log-signature") == nil || len(r.Evidence.Failures) != 0 {
		t.Fatalf("failure removed: verdict %s\n%s", r.Verdict, reportText(t, r))
	}
}

// importedLog converts the benign part of HANSARD, so that only its
// provenance can keep it from a clean verdict.
func importedLog(t *testing.T) (Plan, []byte) {
	t.Helper()
	in, err := os.ReadFile(filepath.Join(compatDir, "hansard_scenario_1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var keep [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		if !bytes.Contains(l, []byte("delete_file")) {
			keep = append(keep, l)
		}
	}
	var out bytes.Buffer
	if _, err := derive.ImportATW(bytes.NewReader(append(bytes.Join(keep, []byte("\n")), '\n')), &out,
		derive.ImportOptions{Name: "clean.jsonl", TS: testTS, Signers: []eventlog.Signer{testKey}}); err != nil {
		t.Fatal(err)
	}
	s, err := seal.Load(filepath.Join(compatDir, "seal_without_damaging_tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := PlanFromSeal(s)
	plan.Ref = "c6d0e4f55b187bb6aa01c345c1f36fef6167b7c75b33a9480e99d0e77b955707" // the seal the events name
	return plan, out.Bytes()
}

// An imported log says so: every output carries "imported, not observed".
func TestImportedNotObserved(t *testing.T) {
	plan, data := importedLog(t)
	r := runCheck(t, plan, data, signedOpts())
	if r.Verdict != verified {
		t.Fatalf("verdict %s\n%s", r.Verdict, reportText(t, r))
	}
	if r.Evidence.Provenance != "imported" || !r.Evidence.imported() || r.Evidence.Sources["imported"] != r.Evidence.Lines {
		t.Errorf("provenance %q sources %v lines %d", r.Evidence.Provenance, r.Evidence.Sources, r.Evidence.Lines)
	}
	if vl := verdictLineOf(t, r); !strings.Contains(vl, "; imported, not observed (converted from atw-0.1.0)") {
		t.Errorf("verdict line %q", vl)
	}
	if js := string(render(t, r, "json")); !strings.Contains(js, `"provenance": "imported"`) || !strings.Contains(js, `"imported, not observed (converted from atw-0.1.0)"`) {
		t.Errorf("json:\n%s", js)
	}
	if s := string(render(t, r, "sarif")); !strings.Contains(s, `"imported": true`) || !strings.Contains(s, `"provenance": "imported"`) {
		t.Errorf("sarif:\n%s", s)
	}
	if ju := string(render(t, r, "junit")); !strings.Contains(ju, `<property name="provenance" value="imported">`) || !strings.Contains(ju, `<property name="qualifier" value="imported, not observed (converted from atw-0.1.0)">`) {
		t.Errorf("junit:\n%s", ju)
	}
	// reported events appended to it: the imported ones are still named
	p := writeFile(t, t.TempDir(), "events.jsonl", data)
	if _, err := derive.AppendLog(p, strings.NewReader(`{"kind":"model_output","content":"done"}`+"\n"),
		derive.AppendOptions{Verifier: testKey, Signers: []eventlog.Signer{testKey}, Clock: func() string { return testTS }}); err != nil {
		t.Fatal(err)
	}
	mixed, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r = runCheck(t, plan, mixed, signedOpts())
	n := r.Evidence.Sources["imported"]
	if r.Verdict != verified || r.Evidence.Provenance != "imported+reported" || r.Evidence.Sources["reported"] != 2 ||
		!strings.Contains(verdictLineOf(t, r), fmt.Sprintf("; imported, not observed (converted from atw-0.1.0): %d of %d lines", n, n+2)) {
		t.Errorf("imported then reported: %s %q %v\n%s", r.Verdict, r.Evidence.Provenance, r.Evidence.Sources, reportText(t, r))
	}
	// an observed capture says nothing of the kind
	plan = testPlan()
	r = runCheck(t, plan, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}), signedOpts())
	if r.Evidence.Provenance != "observed" || r.Evidence.imported() || strings.Contains(verdictLineOf(t, r), "imported") {
		t.Errorf("observed log: %q %q", r.Evidence.Provenance, verdictLineOf(t, r))
	}
}

// sealFor writes a seal that testPlan describes, signed with a fresh
// Ed25519 key, and returns its path, its plan and the keys to check it.
func sealFor(t *testing.T, dir string) (string, Plan, seal.VerifyOptions) {
	t.Helper()
	k := newEd25519Keyring(t, dir, "keys.json")
	trust, err := k.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	tp := testPlan()
	body := seal.Body{CreatedAt: testTS, SystemPromptSHA256: tp.SystemPromptSHA256, WitnessID: tp.WitnessID}
	for _, pt := range tp.Tools {
		body.Tools = append(body.Tools, seal.Tool{Name: pt.Name, Scopes: pt.Scopes, DefinitionSHA256: pt.DefinitionSHA256})
	}
	s, err := k.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := seal.Sign(body, s)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sealed.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "seal.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, PlanFromSeal(sealed), seal.VerifyOptions{Trust: trust}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A graph alone is never verified: it carries no chain. Its verdict is
// unauthenticated (exit 6); a dangling reference is tampering (3).
func TestGraphAloneUnauthenticated(t *testing.T) {
	dir := t.TempDir()
	sealPath, plan, keys := sealFor(t, dir)
	run := func(graphFile string) *Report {
		t.Helper()
		r, err := Run(Options{SealFile: sealPath, GraphFile: graphFile, SealKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	g := writeFile(t, dir, "clean.jsonld", graphOf(t, clean, graph.Options{}))
	r := run(g)
	if r.Verdict != Unauthenticated || r.Code() != exitcode.Unauthenticated {
		t.Fatalf("clean graph: verdict %s\n%s", r.Verdict, reportText(t, r))
	}
	if f := findCode(r, "graph-unauthenticated"); f == nil || f.Class != classUnauthenticated {
		t.Errorf("finding %+v", f)
	}
	if vl := verdictLineOf(t, r); !strings.HasPrefix(vl, "verdict: unauthenticated (exit 6): 0 errors, 1 warning, ") || !strings.Contains(vl, "; unauthenticated: a graph alone carries no chain or signature;") {
		t.Errorf("verdict line %q", vl)
	}
	if ju := string(render(t, r, "junit")); !strings.Contains(ju, `type="unauthenticated"`) {
		t.Errorf("junit:\n%s", ju)
	}

	// a violation in a graph alone: unauthenticated, the violation listed
	bad := buildLog(t, plan, logSpec{events: append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", `"d1"`, map[string]any{"target": "/x"})), signer: testKey})
	r = run(writeFile(t, dir, "bad.jsonld", graphOf(t, bad, graph.Options{})))
	if r.Verdict != Unauthenticated || findCode(r, "unsealed-tool") == nil || !strings.Contains(verdictLineOf(t, r), "also violation: 1 finding") {
		t.Errorf("graph with a violation: %s\n%s", r.Verdict, reportText(t, r))
	}

	// a node removed: the references to it dangle
	gr, err := graph.ReadJSONLD(bytes.NewReader(graphOf(t, clean, graph.Options{})), "g")
	if err != nil {
		t.Fatal(err)
	}
	removed := ""
	var keep []*graph.Node
	for _, n := range gr.Nodes {
		if removed == "" && n.HasType(graph.WToolCall) {
			removed = n.ID
			continue
		}
		keep = append(keep, n)
	}
	cut := graph.New()
	for _, n := range keep {
		if err := cut.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	var doc bytes.Buffer
	if err := cut.WriteJSONLD(&doc); err != nil {
		t.Fatal(err)
	}
	r = run(writeFile(t, dir, "cut.jsonld", doc.Bytes()))
	f := findCode(r, "graph-dangling")
	if r.Verdict != Tampered || f == nil || !strings.Contains(f.Message, removed) {
		t.Fatalf("dangling graph: verdict %s, finding %+v\n%s", r.Verdict, f, reportText(t, r))
	}
	// the graphs 'witness graph' writes hold no dangling reference
	for _, data := range [][]byte{clean, bad} {
		g, err := graph.ReadJSONLD(bytes.NewReader(graphOf(t, data, graph.Options{})), "g")
		if err != nil {
			t.Fatal(err)
		}
		if d := danglingRefs(g); len(d) != 0 {
			t.Errorf("dangling refs in a written graph: %+v", d)
		}
	}
}

// A graph checked against its event log may verify; it must be exactly
// that log's graph.
func TestGraphWithEvents(t *testing.T) {
	dir := t.TempDir()
	sealPath, plan, keys := sealFor(t, dir)
	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	events := writeFile(t, dir, "events.jsonl", clean)
	run := func(events, graphFile string) *Report {
		t.Helper()
		r, err := Run(Options{SealFile: sealPath, EventsFile: events, GraphFile: graphFile, SealKeys: keys, EndVerifier: testKey})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, opts := range map[string]graph.Options{
		"header seal": {},
		"given seal":  {Seal: &eventlog.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID}},
		"no payloads": {OmitPayloads: true},
		"other plan":  {Seal: &eventlog.SealRef{Digest: strings.Repeat("cd", 32), WitnessID: "other"}},
	} {
		doc := graphOf(t, clean, opts)
		r := run(events, writeFile(t, dir, "g.jsonld", doc))
		g, _ := graph.ReadJSONLD(bytes.NewReader(doc), "g")
		want, _ := g.WriteNQuads(new(bytes.Buffer))
		if r.Verdict != verified || r.Evidence.GraphFile == "" || r.Evidence.GraphDigest != want {
			t.Errorf("%s: verdict %s, digest %s want %s\n%s", name, r.Verdict, r.Evidence.GraphDigest, want, reportText(t, r))
		}
	}
	// one value of the graph edited: mismatch (tampered)
	doc := graphOf(t, clean, graph.Options{})
	edited := bytes.Replace(doc, []byte("/data/report.txt"), []byte("/data/report.txT"), 1)
	if bytes.Equal(edited, doc) {
		t.Fatal("the edit changed nothing")
	}
	r := run(events, writeFile(t, dir, "edited.jsonld", edited))
	if f := findCode(r, "graph-mismatch"); r.Verdict != Tampered || f == nil || f.Class != classTampered {
		t.Errorf("edited graph: %s %+v", r.Verdict, f)
	}
	// the graph of another log: mismatch
	other := buildLog(t, plan, logSpec{events: cleanEvents()[:3], signer: testKey})
	r = run(events, writeFile(t, dir, "other.jsonld", graphOf(t, other, graph.Options{})))
	if r.Verdict != Tampered || findCode(r, "graph-mismatch") == nil {
		t.Errorf("another log's graph: %s\n%s", r.Verdict, reportText(t, r))
	}
	// a graph that matches an unsigned log is no better than the log
	unsigned := writeFile(t, dir, "unsigned.jsonl", buildLog(t, plan, logSpec{events: cleanEvents()}))
	r = run(unsigned, writeFile(t, dir, "u.jsonld", graphOf(t, buildLog(t, plan, logSpec{events: cleanEvents()}), graph.Options{})))
	if r.Verdict != Incomplete || findCode(r, "graph-mismatch") != nil {
		t.Errorf("graph of an unsigned log: %s\n%s", r.Verdict, reportText(t, r))
	}
	// not a graph at all
	r = run(events, writeFile(t, dir, "junk.jsonld", []byte(`{"@graph": 3}`)))
	if r.Verdict != Tampered || findCode(r, "graph-invalid") == nil {
		t.Errorf("junk graph: %s\n%s", r.Verdict, reportText(t, r))
	}
}
