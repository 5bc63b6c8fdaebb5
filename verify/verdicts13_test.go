package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/junitcheck"
	"github.com/agent-trace-witness/witness/seal"
)

// noPathReport is a log whose scoped tools are called, but never with a
// path argument: the argument-scope check judged nothing.
func noPathReport(t *testing.T) *Report {
	t.Helper()
	plan := testPlan()
	sys := ev(eventlog.KindModelInput, "", "", testPrompt)
	sys.Role = "system"
	evs := []*eventlog.Event{sys,
		ev(eventlog.KindToolCall, "list_dir", "1", map[string]any{"depth": 1}),
		ev(eventlog.KindToolCall, "read_file", "2", map[string]any{}),
	}
	return runCheck(t, plan, buildLog(t, plan, logSpec{events: evs, signer: testKey}), signedOpts())
}

func checkStatus(r *Report, id string) CheckStatus {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status
		}
	}
	return ""
}

// A check that judged nothing is not-checkable in JSON, skipped in JUnit
// and notApplicable in SARIF; with one call that has a path it passes.
func TestUnrunCheckIsNeverPass(t *testing.T) {
	r := noPathReport(t)
	if got := checkStatus(r, checkScope); got != StatusNotCheckable {
		t.Fatalf("argument-scope status %q, want not-checkable\n%s", got, reportText(t, r))
	}
	var js struct {
		Checks []CheckResult `json:"checks"`
	}
	if err := json.Unmarshal(render(t, r, "json"), &js); err != nil {
		t.Fatal(err)
	}
	for _, c := range js.Checks {
		if c.ID == checkScope && (c.Status != StatusNotCheckable || c.Reason == "") {
			t.Errorf("JSON: %+v", c)
		}
	}
	ju := render(t, r, "junit")
	if err := junitcheck.Check(ju); err != nil {
		t.Fatalf("JUnit: %v\n%s", err, ju)
	}
	i := bytes.Index(ju, []byte(`name="argument-scope: `))
	if i < 0 {
		t.Fatal("no argument-scope case")
	}
	caseXML := ju[i:]
	caseXML = caseXML[:bytes.Index(caseXML, []byte("</testcase>"))]
	if !bytes.Contains(caseXML, []byte("<skipped ")) {
		t.Errorf("JUnit: argument-scope not skipped:\n%s", caseXML)
	}
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID, Kind, Level string
			} `json:"results"`
			Properties struct {
				Checks []CheckResult `json:"checks"`
			} `json:"properties"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(render(t, r, "sarif"), &sarif); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, res := range sarif.Runs[0].Results {
		if res.RuleID == "scope-not-checkable" {
			seen = true
			if res.Kind != "notApplicable" || res.Level != "none" {
				t.Errorf("SARIF result %+v", res)
			}
		}
	}
	if !seen {
		t.Error("SARIF: no scope-not-checkable result")
	}
	for _, c := range sarif.Runs[0].Properties.Checks {
		if c.ID == checkScope && c.Status != StatusNotCheckable {
			t.Errorf("SARIF checks: %+v", c)
		}
	}

	// partly checked: pass, with the notice
	plan := testPlan()
	evs := append(cleanEvents(), ev(eventlog.KindToolCall, "list_dir", "9", map[string]any{"depth": 1}))
	r = runCheck(t, plan, buildLog(t, plan, logSpec{events: evs, signer: testKey}), signedOpts())
	if got := checkStatus(r, checkScope); got != statusPass || findCode(r, "scope-not-checkable") == nil {
		t.Errorf("partly checked: status %q\n%s", got, reportText(t, r))
	}
}

// verify's JUnit keeps junit-10.xsd for every kind of report.
func TestVerifyJUnitIsJUnit10(t *testing.T) {
	plan := testPlan()
	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	for name, r := range map[string]*Report{
		"violation":   violationReport(t),
		"clean":       runCheck(t, plan, clean, signedOpts()),
		"not checked": noPathReport(t),
		"graph":       runGraph(t, plan, graphOf(t, clean, graph.Options{})),
	} {
		ju := render(t, r, "junit")
		if err := junitcheck.Check(ju); err != nil {
			t.Errorf("%s: %v\n%s", name, err, ju)
		}
		if bytes.Contains(ju, []byte("<testsuites")) && bytes.Contains(ju[:bytes.Index(ju, []byte("<testsuite "))], []byte("skipped=")) {
			t.Errorf("%s: skipped on testsuites", name)
		}
	}
}

// SARIF artifact URIs are RFC 3986 references for any file name, and the
// log validates against the SARIF 2.1.0 schema with them.
func TestSARIFURIsOddNames(t *testing.T) {
	for in, want := range map[string]string{
		"events.jsonl":             "events.jsonl",
		"my events.jsonl":          "my%20events.jsonl",
		"100%.jsonl":               "100%25.jsonl",
		"évidence/ログ.jsonl":        "%C3%A9vidence/%E3%83%AD%E3%82%B0.jsonl",
		"a#b?c.jsonl":              "a%23b%3Fc.jsonl",
		"c:evil.jsonl":             "./c:evil.jsonl",
		"/var/ev idence/e.jsonl":   "file:///var/ev%20idence/e.jsonl",
		"dir/[x]{y}<z>\"q\\.jsonl": "dir/%5Bx%5D%7By%7D%3Cz%3E%22q%5C.jsonl",
	} {
		if got := sarifURI(in); got != want {
			t.Errorf("sarifURI(%q) = %q, want %q", in, got, want)
		}
	}

	raw, err := os.ReadFile(filepath.Join("testdata", "sarif-2.1.0-rtm.5.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"my events.jsonl", "100%.jsonl", "évidence/ログ.jsonl", "a#b?c.jsonl", "/tmp/ev idence/%41.jsonl", "c:x.jsonl"} {
		r := violationReport(t)
		r.Evidence.File = name
		r.Seal.File = "seal " + filepath.Base(name)
		for i := range r.Findings {
			if r.Findings[i].File == "events.jsonl" {
				r.Findings[i].File = name
			}
		}
		out := render(t, r, "sarif")
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%q: SARIF does not validate: %v", name, err)
		}
	}
	// not vacuous: a raw space in a URI fails the schema's uri-reference
	bad := bytes.Replace(render(t, violationReport(t), "sarif"), []byte(`"uri": "events.jsonl"`), []byte(`"uri": "my events%.jsonl"`), 1)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if err := sch.Validate(inst); err == nil {
		t.Error("a raw space and a lone % in an artifact URI validated")
	}
}

// --events without --seal: integrity only, said in the verdict line and
// the JSON; never a violation, even for an unsealed tool.
func TestIntegrityOnly(t *testing.T) {
	dir := t.TempDir()
	plan := testPlan()
	evs := append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", "9", map[string]any{"path": "/etc"}))
	data := buildLog(t, plan, logSpec{events: evs, signer: testKey})
	p := writeFile(t, dir, "events.jsonl", data)
	r, err := Run(Options{EventsFile: p, EndVerifier: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != verified || len(r.Qualifiers) == 0 || r.Qualifiers[0] != IntegrityOnly {
		t.Fatalf("verdict %s, qualifiers %q\n%s", r.Verdict, r.Qualifiers, reportText(t, r))
	}
	if !strings.Contains(r.VerdictLine(), "; integrity only: no seal given") {
		t.Errorf("verdict line %q", r.VerdictLine())
	}
	for _, c := range r.Checks {
		want := StatusNotCheckable
		if c.ID == checkChain {
			want = statusPass
		}
		if c.Status != want {
			t.Errorf("check %s: %s, want %s", c.ID, c.Status, want)
		}
	}
	if len(r.Findings) != 0 {
		t.Errorf("findings: %+v", r.Findings)
	}
	if !bytes.Contains(render(t, r, "json"), []byte(`"integrity only: no seal given"`)) {
		t.Error("JSON does not say integrity only")
	}
	// the integrity checks still run: tampered, incomplete, cannot check
	edited := bytes.Replace(data, []byte("/data/report.txt"), []byte("/data/rEport.txt"), 1)
	for name, tc := range map[string]struct {
		data []byte
		v    eventlog.SignatureVerifier
		want Verdict
	}{
		"edited":       {edited, testKey, Tampered},
		"cut":          {data[:len(data)-10], testKey, Incomplete},
		"no key":       {data, nil, Unauthenticated},
		"recorded ok ": {data, testKey, verified},
	} {
		p := writeFile(t, dir, "e.jsonl", tc.data)
		r, err := Run(Options{EventsFile: p, EndVerifier: tc.v})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != tc.want {
			t.Errorf("%s: verdict %s, want %s\n%s", name, r.Verdict, tc.want, reportText(t, r))
		}
	}
	// no seal and no events, or a graph without a seal: usage
	if _, err := Run(Options{GraphFile: p}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("--graph without --seal: %v", err)
	}
}

// Files of the wrong kind are usage errors naming the right flag; a
// corrupted event log is still read (and found tampered).
func TestWrongKind(t *testing.T) {
	dir := t.TempDir()
	sealPath, plan, keys := sealFor(t, dir)
	sealData, _ := os.ReadFile(sealPath)
	logData := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	logPath := writeFile(t, dir, "events.jsonl", logData)
	files := map[string][]byte{
		"cassette.jsonl":   []byte(`{"format":"witness-cassette","v":1,"session":"x"}` + "\n" + `{"seq":1}` + "\n"),
		"http.jsonl":       []byte(`{"format":"witness-http-cassette","v":1}` + "\n"),
		"drift.jsonl":      []byte(`{"format":"witness-drift-report","v":1}` + "\n"),
		"graph.jsonld":     graphOf(t, logData, graph.Options{}),
		"atw.jsonl":        []byte(`{"payload":{"tool":"x"},"timestamp":"2026-08-31T00:00:00+00:00","type":"tool_call"}` + "\n"),
		"trust.json":       []byte("{\n  \"format\": \"witness-trust/v1\",\n  \"keys\": []\n}\n"),
		"verdict.json":     []byte(`{"format":"witness-verdict","v":1}`),
		"spec.json":        []byte(`{"system_prompt":"x","tools":[{"name":"a"}]}`),
		"envelope.jsonl":   []byte(`{"payload":"e30","payloadType":"application/vnd.in-toto+json","signatures":[]}`),
		"seal.json":        sealData,
		"events.jsonl":     logData,
		"corrupted.jsonl":  bytes.Replace(logData, []byte(`"kind":"session_start"`), []byte(`"kind":"session_stXrt"`), 1),
		"destroyed.jsonl":  append([]byte("garbage\n"), logData...),
		"header-cut.jsonl": logData[:40],
	}
	paths := map[string]string{}
	for n, d := range files {
		paths[n] = writeFile(t, dir, n, d)
	}
	for _, tc := range []struct {
		flag, file string
		wantUsage  string // "" when the file is read as evidence
	}{
		{"events", "cassette.jsonl", "witness serve --cassette"},
		{"events", "http.jsonl", "--listen"},
		{"events", "drift.jsonl", "witness drift"},
		{"events", "graph.jsonld", "--graph"},
		{"events", "seal.json", "--seal"},
		{"events", "envelope.jsonl", "--seal"},
		{"events", "atw.jsonl", "witness import"},
		{"events", "trust.json", "--trust"},
		{"events", "verdict.json", "witness verify --json"},
		{"graph", "events.jsonl", "--events"},
		{"graph", "cassette.jsonl", "witness serve"},
		{"seal", "events.jsonl", "--events"},
		{"seal", "cassette.jsonl", "witness serve"},
		{"seal", "graph.jsonld", "--graph"},
		{"seal", "spec.json", "witness seal --spec"},
		{"seal", "trust.json", "--trust"},
		{"events", "corrupted.jsonl", ""},
		{"events", "destroyed.jsonl", ""},
		{"events", "header-cut.jsonl", ""},
	} {
		o := Options{SealFile: sealPath, SealKeys: keys, EndVerifier: testKey}
		switch tc.flag {
		case "events":
			o.EventsFile = paths[tc.file]
		case "graph":
			o.GraphFile = paths[tc.file]
		case "seal":
			o.SealFile, o.EventsFile = paths[tc.file], logPath
		}
		r, err := Run(o)
		if tc.wantUsage == "" {
			if err != nil {
				t.Errorf("--%s %s: %v", tc.flag, tc.file, err)
			} else if r.Verdict != Tampered && r.Verdict != Incomplete {
				t.Errorf("--%s %s: verdict %s, want tampered or incomplete", tc.flag, tc.file, r.Verdict)
			}
			continue
		}
		var ee *exitcode.Error
		if exitcode.Of(err) != exitcode.Usage || !errorsAs(err, &ee) || !strings.Contains(ee.Hint, tc.wantUsage) {
			t.Errorf("--%s %s: %v (hint %q), want usage with %q", tc.flag, tc.file, err, hintOf(err), tc.wantUsage)
		}
	}
}

// An event log header longer than the sniffing window is still an event
// log (its header format comes first), and odd inputs never panic.
func TestSniffKindBounded(t *testing.T) {
	long := `{"header":{"format":"witness-events","server":{"tools":[` + strings.Repeat(`{"name":"x"},`, sniffLimit/12) + `{}]}},"id":"e0"}`
	if k := sniffKind([]byte(long)); k != kindEvents {
		t.Errorf("long header: %q", k)
	}
	deep := strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300)
	for _, in := range []string{"", "[", "{", `{"format":1}`, deep, `"str"`, `{"tools":[],"signature":"x","witness_id":"w"}`} {
		_ = sniffKind([]byte(in))
	}
	if k := sniffKind([]byte(`{"tools":[],"signature":"x","witness_id":"w"}`)); k != kindSeal {
		t.Errorf("seal: %q", k)
	}
}

func errorsAs(err error, target **exitcode.Error) bool {
	for e := err; e != nil; {
		if x, ok := e.(*exitcode.Error); ok {
			*target = x
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func hintOf(err error) string {
	var e *exitcode.Error
	if errorsAs(err, &e) {
		return e.Hint
	}
	return ""
}

// --seal reads a DSSE envelope: the seal inside is judged; an envelope no
// held key signed cannot be checked (unauthenticated, exit 6); a changed
// payload is tampered.
func TestSealEnvelope(t *testing.T) {
	dir := t.TempDir()
	k := newEd25519Keyring(t, dir, "envelope-keys.json")
	trust, _ := k.ExportTrust()
	signer, _ := k.ActiveSigner()
	tp := testPlan()
	body := seal.Body{CreatedAt: testTS, SystemPromptSHA256: tp.SystemPromptSHA256, WitnessID: tp.WitnessID}
	for _, pt := range tp.Tools {
		body.Tools = append(body.Tools, seal.Tool{Name: pt.Name, Scopes: pt.Scopes, DefinitionSHA256: pt.DefinitionSHA256})
	}
	s, err := seal.Sign(body, signer)
	if err != nil {
		t.Fatal(err)
	}
	env, err := seal.NewEnvelope(s, "seal.json", signer)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := env.Marshal()
	envPath := writeFile(t, dir, "seal.intoto.jsonl", line)
	plan := PlanFromSeal(s)
	logPath := writeFile(t, dir, "events.jsonl", buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}))

	r, err := Run(Options{SealFile: envPath, EventsFile: logPath, SealKeys: seal.VerifyOptions{Trust: trust}, EndVerifier: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != verified || r.Seal.Envelope != "dsse" || len(r.Seal.EnvelopeSigners) != 1 {
		t.Fatalf("verdict %s, seal %+v\n%s", r.Verdict, r.Seal, reportText(t, r))
	}

	// another trust file: cannot check, exit 6
	other := newEd25519Keyring(t, dir, "other.json")
	otrust, _ := other.ExportTrust()
	r, err = Run(Options{SealFile: envPath, EventsFile: logPath, SealKeys: seal.VerifyOptions{Trust: otrust}, EndVerifier: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Unauthenticated || r.Code() != exitcode.Unauthenticated || findCode(r, "seal-unauthenticated") == nil {
		t.Errorf("other keys: verdict %s\n%s", r.Verdict, reportText(t, r))
	}

	// a changed payload: tampered
	var e map[string]any
	json.Unmarshal(line, &e)
	payload, _ := base64.StdEncoding.DecodeString(e["payload"].(string))
	e["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte("witness-test"), []byte("witness-tesT"), 1))
	changed, _ := json.Marshal(e)
	chPath := writeFile(t, dir, "changed.intoto.jsonl", changed)
	r, err = Run(Options{SealFile: chPath, EventsFile: logPath, SealKeys: seal.VerifyOptions{Trust: trust}, EndVerifier: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Tampered || findCode(r, "seal-invalid") == nil {
		t.Errorf("changed payload: verdict %s\n%s", r.Verdict, reportText(t, r))
	}
}

// A seal whose key the verifier does not hold: unauthenticated (6), not
// tampered (3).
func TestSealUnknownKeyIsUnauthenticated(t *testing.T) {
	dir := t.TempDir()
	sealPath, plan, _ := sealFor(t, dir)
	other := newEd25519Keyring(t, dir, "other.json")
	otrust, _ := other.ExportTrust()
	logPath := writeFile(t, dir, "events.jsonl", buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}))
	r, err := Run(Options{SealFile: sealPath, EventsFile: logPath, SealKeys: seal.VerifyOptions{Trust: otrust}, EndVerifier: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Unauthenticated || r.Code() != exitcode.Unauthenticated || findCode(r, "seal-unauthenticated") == nil || findCode(r, "seal-invalid") != nil {
		t.Errorf("verdict %s\n%s", r.Verdict, reportText(t, r))
	}
	if !strings.Contains(r.VerdictLine(), "unauthenticated: signed by a key the keyring and trust file given do not hold") {
		t.Errorf("verdict line %q", r.VerdictLine())
	}
}
