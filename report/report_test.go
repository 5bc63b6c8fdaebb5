package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/verify"
)

// fixture is a capture against the Go SDK fixture server (four calls,
// delete_file not in the seal), its cassette, the Ed25519-signed seal and
// the trust file holding the public key.
const fixture = "testdata/capture"

func fixtureOptions(t testing.TB) Options {
	t.Helper()
	trust, err := keyring.LoadTrust(filepath.Join(fixture, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Events:    []string{filepath.Join(fixture, "events.jsonl")},
		Verify:    verify.Options{SealFile: filepath.Join(fixture, "seal.json"), SealKeys: seal.VerifyOptions{Trust: trust}, EndVerifier: verify.EndVerifier(nil, trust)},
		Generated: "2026-08-30T14:33:00+00:00",
	}
}

func buildFixture(t testing.TB) *Data {
	t.Helper()
	d, err := Build(fixtureOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuildFixture(t *testing.T) {
	d := buildFixture(t)
	if d.Verdict.Verdict != "violation" || d.Verdict.ExitCode != 1 {
		t.Errorf("verdict %+v, want violation, exit 1", d.Verdict)
	}
	if len(d.Logs) != 1 || len(d.Logs[0].EndSigned) == 0 {
		t.Errorf("logs %+v: want one log with a signed end", d.Logs)
	}
	var f *Finding
	for i := range d.Findings {
		if d.Findings[i].Code == "unsealed-tool" {
			f = &d.Findings[i]
		}
	}
	if f == nil {
		t.Fatalf("no unsealed-tool finding in %+v", d.Findings)
	}
	if d.Findings[0].Class == "notice" {
		t.Errorf("first finding is a notice: violations come first")
	}
	// why's chain: without a model channel the call depends on nothing
	// recorded, so the chain is the call itself (witness why prints that)
	if f.Chain == nil || len(f.Chain.Steps) != 1 {
		t.Fatalf("unsealed-tool chain %+v (%s): want the call alone", f.Chain, f.ChainNote)
	}
	last := f.Chain.Steps[len(f.Chain.Steps)-1]
	if last.Event != f.Event || !strings.Contains(last.Label, "delete_file") {
		t.Errorf("chain ends at %+v, want the finding's call %s", last, f.Event)
	}
	if len(f.ChainRows) != len(f.Chain.Steps) {
		t.Errorf("chain rows %v for %d steps", f.ChainRows, len(f.Chain.Steps))
	}
	// the finding's event carries its payload, sha256 and exact wire bytes
	var det *Detail
	for i := range d.Details {
		if d.Details[i].Row == f.Row {
			det = &d.Details[i]
		}
	}
	if det == nil {
		t.Fatalf("no detail for row %d", f.Row)
	}
	if !strings.Contains(det.Wire, `"delete_file"`) || !strings.HasSuffix(det.Wire, "\n") || len(det.SHA256) != 64 || !strings.Contains(det.Payload, "/srv/data/report.csv") {
		t.Errorf("detail %+v: want the call's wire line, its payload and sha256", det)
	}
	cas, err := os.ReadFile(filepath.Join(fixture, "cassette.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cas, []byte(strings.TrimSuffix(strings.ReplaceAll(det.Wire, `"`, `\"`), "\n"))) {
		t.Errorf("wire bytes %q are not in the cassette", det.Wire)
	}
	// lanes: one per actor, the server by its name
	if !contains(d.Lanes, "witness-gosdk-fixture server") || !contains(d.Lanes, "agent") || !contains(d.Lanes, "effects") {
		t.Errorf("lanes %v", d.Lanes)
	}
	if len(d.Rank) == 0 || d.Rank[0].Rank != 1 {
		t.Errorf("rank %+v: want replay's ranking", d.Rank)
	}
	if f.Removing == nil || f.Removing.Removed == 0 {
		t.Errorf("finding counterfactual %+v", f.Removing)
	}
	if d.Graph.Summary != "" || len(d.Graph.Nodes) == 0 || len(d.Graph.Edges) == 0 {
		t.Errorf("graph: %d nodes, %d edges, summary %q", len(d.Graph.Nodes), len(d.Graph.Edges), d.Graph.Summary)
	}
	// time order: no edge points forward in time (a cause is never later)
	for _, e := range d.Graph.Edges {
		if d.Graph.Nodes[e.To].X > d.Graph.Nodes[e.From].X {
			t.Errorf("edge %+v points to a later column", e)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestHTMLDeterministic: ten builds, ten identical pages; the page carries
// the CSP and refers to nothing outside itself.
func TestHTMLDeterministic(t *testing.T) {
	var first []byte
	for i := 0; i < 10; i++ {
		var b bytes.Buffer
		if err := WriteHTML(&b, buildFixture(t)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
			continue
		}
		if !bytes.Equal(first, b.Bytes()) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
	page := string(first)
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;unsafe-inline&#39;; script-src &#39;unsafe-inline&#39;; img-src data:">`) {
		t.Error("no CSP meta tag")
	}
	if strings.Count(page, "url(") != strings.Count(page, "url(#") {
		t.Error("page has a url() that is not a reference inside it")
	}
	for _, bad := range []string{" src=", "<link", "@import", "fetch(", "XMLHttpRequest"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if strings.Count(page, "</script>") != 2 {
		t.Errorf("%d </script>: the data must not close its script element", strings.Count(page, "</script>"))
	}
}

// TestScaleSummaries: above the limits the timeline is bucketed and the
// graph summarised; the page stays small.
func TestScaleSummaries(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "events.jsonl")
	var b bytes.Buffer
	if err := synthlog.Generate(&b, 3000, 1, "scale"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Build(Options{Events: []string{p}, Verify: verify.Options{AllowUnsigned: true}, MaxTimeline: 500, MaxGraphNodes: 200, MaxDetails: 100})
	if err != nil {
		t.Fatal(err)
	}
	if d.Timeline.Total != 3000 || len(d.Timeline.Rows) != 3000 || d.Timeline.Size == 0 {
		t.Fatalf("timeline: total %d, rows %d, bucket size %d", d.Timeline.Total, len(d.Timeline.Rows), d.Timeline.Size)
	}
	sum := 0
	for _, lane := range d.Timeline.Buckets {
		for _, c := range lane {
			sum += c
		}
	}
	if sum != 3000 {
		t.Errorf("buckets count %d events, want 3000", sum)
	}
	if d.Graph.Summary == "" || len(d.Graph.Nodes) > defaultGraphWindows*len(d.Lanes) {
		t.Errorf("graph: %d nodes, summary %q", len(d.Graph.Nodes), d.Graph.Summary)
	}
	if len(d.Details) != 100 {
		t.Errorf("%d details, want 100", len(d.Details))
	}
}

// TestMultipleLogs: two logs, one timeline, the worst verdict.
// agentStory is the demo's agent story (testdata/demo/agent, the
// openai-agents run): its three logs, a seal of agent.json signed by a key
// made here, and trust.json (the recording's key) merged with that key.
func agentStory(t testing.TB) Options {
	t.Helper()
	const demo = "../testdata/demo/agent"
	dir := t.TempDir()
	kp := filepath.Join(dir, "keys.json")
	if _, err := keyring.Generate(kp, keyring.Options{}, keyring.AlgEd25519); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.Open(kp, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	trust, err := keyring.LoadTrust(filepath.Join(demo, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	kt, err := k.ExportTrust()
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.Merge(kt); err != nil {
		t.Fatal(err)
	}
	sp, err := seal.LoadSpec(filepath.Join(demo, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-08-30T14:33:00+00:00"
	body, err := seal.NewBody(sp, seal.BodyOptions{Getenv: func(k string) string {
		if k == "ATW_WITNESS_TS" {
			return ts
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := k.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := seal.Sign(body, signer)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sealed.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sp2 := filepath.Join(dir, "agent-seal.json")
	if err := os.WriteFile(sp2, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, ch := range []string{"model", "fs", "everything"} {
		evs = append(evs, filepath.Join(demo, "openai-agents", ch, "events.jsonl"))
	}
	return Options{
		Events:    evs,
		Verify:    verify.Options{SealFile: sp2, SealKeys: seal.VerifyOptions{Trust: trust}, EndVerifier: verify.EndVerifier(nil, trust)},
		Generated: ts,
	}
}

// The logs of one run are judged as one run, as `witness verify --events
// A --events B --events C` judges them: the run-level finding
// (injection-provenance) is there, its chain crosses the channels back to
// the poisoned read, and the lanes name the channels.
func TestMultipleLogs(t *testing.T) {
	o := agentStory(t)
	d, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := verify.Run(verify.Options{SealFile: o.Verify.SealFile, SealKeys: o.Verify.SealKeys, EndVerifier: o.Verify.EndVerifier,
		EventsFile: o.Events[0], RunEvents: o.Events[1:]})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict.Verdict != string(vr.Verdict) || d.Verdict.Verdict != "violation" || len(d.Findings) != len(vr.Findings) {
		t.Errorf("verdict %s with %d findings, verify says %s with %d", d.Verdict.Verdict, len(d.Findings), vr.Verdict, len(vr.Findings))
	}
	total := 0
	for i, l := range d.Logs {
		total += l.Events
		// each log's own integrity: verified alone, it holds
		if l.Verdict != "verified" {
			t.Errorf("log %d %s: %s (%s)", i, l.File, l.Verdict, l.Line)
		}
	}
	if len(d.Logs) != 3 || d.Timeline.Total != total {
		t.Errorf("logs %d, events %d of %d", len(d.Logs), d.Timeline.Total, total)
	}
	for _, l := range []string{"model", "fs server", "everything server"} {
		if !contains(d.Lanes, l) {
			t.Errorf("no lane %q in %v", l, d.Lanes)
		}
	}
	var inj *Finding
	for i := range d.Findings {
		if d.Findings[i].Code == "injection-provenance" {
			inj = &d.Findings[i]
		}
	}
	if inj == nil || inj.Chain == nil {
		t.Fatalf("no injection-provenance finding with a chain: %+v", d.Findings)
	}
	if d.Logs[inj.Log].Server != "fs" || inj.Tool != "write_file" || inj.Row < 0 {
		t.Errorf("finding on log %d (%s) %s row %d", inj.Log, d.Logs[inj.Log].Server, inj.Event, inj.Row)
	}
	// the chain reaches the poisoned read on fs (e6, its result e7) through
	// the model channel; its last step is the write itself
	logsOnChain := map[string]bool{}
	read := false
	for i, s := range inj.Chain.Steps {
		r := inj.ChainRows[i]
		if r < 0 {
			continue
		}
		row := d.Timeline.Rows[r]
		logsOnChain[d.Logs[row[0]].Server] = true
		if d.Logs[row[0]].Server == "fs" && s.Event == "e6" {
			read = true
		}
	}
	last := inj.Chain.Steps[len(inj.Chain.Steps)-1]
	if !read || !logsOnChain["model"] || last.Event != inj.Event {
		t.Errorf("chain reaches fs:e6 %v, logs %v, last %s: %+v", read, logsOnChain, last.Event, inj.Chain.Steps)
	}
	if inj.Removing == nil || inj.Removing.Removed == 0 {
		t.Errorf("no counterfactual: %+v", inj.Removing)
	}
	// same inputs, same bytes (the joined graph, why's chains, replay)
	var a, b bytes.Buffer
	if err := WriteHTML(&a, d); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		d2, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := WriteHTML(&b, d2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("build %d of the same run gives other bytes", i+2)
		}
	}
}

// FuzzBuild: any bytes as an event log give a report or an error, never a
// panic.
func FuzzBuild(f *testing.F) {
	ev, err := os.ReadFile(filepath.Join(fixture, "events.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ev)
	f.Add(ev[:len(ev)/2])
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "events.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Build(Options{Events: []string{p}, Verify: verify.Options{AllowUnsigned: true}})
		if err != nil {
			return
		}
		if err := WriteHTML(&bytes.Buffer{}, d); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStory: the first screen's data. Every finding has a sentence; the
// findings that break the rules come worst first; the agent story's worst
// is the injection, told from its events (the tool, the path it wrote,
// the untrusted file read before it); its path runs from the untrusted
// source to the action; what it touched is the write's effect; every
// failing check says why.
func TestStory(t *testing.T) {
	d, err := Build(agentStory(t))
	if err != nil {
		t.Fatal(err)
	}
	fx := buildFixture(t)
	for _, dd := range []*Data{d, fx} {
		for i, f := range dd.Findings {
			if f.Sentence == "" {
				t.Errorf("finding %d (%s) has no sentence", i, f.Code)
			}
			if i > 0 && classRank(f.Class) > classRank(dd.Findings[i-1].Class) {
				t.Errorf("finding %d (%s) is worse than the one before it", i, f.Class)
			}
		}
		checks := dd.RunChecks
		for _, l := range dd.Logs {
			checks = append(checks, l.Checks...)
		}
		for _, c := range checks {
			if c.Status == "fail" && c.Reason == "" {
				t.Errorf("failing check %s says no why", c.ID)
			}
		}
	}
	w := d.Findings[d.Story.Worst]
	if d.Story.Worst != 0 || w.Code != "injection-provenance" {
		t.Fatalf("worst finding %d %s, want 0 injection-provenance", d.Story.Worst, w.Code)
	}
	for _, s := range []string{"write_file wrote to /tmp/witness-agent-demo/precious.txt (fs:e8)", "after the model read /tmp/witness-agent-demo/inbox/poisoned.txt (read_text_file, fs:e7)", "untrusted"} {
		if !strings.Contains(w.Sentence, s) {
			t.Errorf("sentence %q does not say %q", w.Sentence, s)
		}
	}
	p := d.Story.Path
	if len(p) < 3 || p[0].Ref != "fs:e7" || p[0].Role != "source" || p[len(p)-1].Ref != "fs:e8" || p[len(p)-1].Role != "action" {
		t.Errorf("story path %+v: want fs:e7 (source) … fs:e8 (action)", p)
	}
	if len(d.Story.Touched) != 1 || d.Story.Touched[0].What != "write" || d.Story.Touched[0].Target != "/tmp/witness-agent-demo/precious.txt" {
		t.Errorf("touched %+v: want the write to precious.txt", d.Story.Touched)
	}
	if d.Story.Notices != 7 {
		t.Errorf("%d notices, want 7", d.Story.Notices)
	}
	if s := fx.Findings[0].Sentence; s != "delete_file wrote to /srv/data/report.csv (e16), and the seal does not list delete_file." {
		t.Errorf("fixture sentence %q", s)
	}
}
