package verify

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// violationReport is a report with findings of every class.
func violationReport(t testing.TB) *Report {
	t.Helper()
	plan := testPlan()
	evs := append(cleanEvents()[:5],
		ev(eventlog.KindToolCall, "delete_file", `"del-1"`, map[string]any{"target": "/data/secret.txt"}),
		ev(eventlog.KindToolCall, "read_file", "42", map[string]any{"path": "/data/../etc/passwd"}))
	data := buildLog(t, plan, logSpec{events: evs}) // unsigned: incomplete
	r := runCheck(t, plan, data, eventOptions{})
	r.Seal = SealSummary{File: "seal.json", Digest: plan.Ref, WitnessID: plan.WitnessID}
	return r
}

func render(t testing.TB, r *Report, format string) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch format {
	case "text":
		err = r.WriteText(&b, true)
	case "json":
		err = r.WriteJSON(&b)
	case "sarif":
		err = r.WriteSARIF(&b)
	case "junit":
		err = r.WriteJUnit(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Ten runs over the same inputs give the same bytes in every format.
func TestDeterministic(t *testing.T) {
	for _, format := range []string{"text", "json", "sarif", "junit"} {
		first := render(t, violationReport(t), format)
		for i := 0; i < 9; i++ {
			if got := render(t, violationReport(t), format); !bytes.Equal(got, first) {
				t.Fatalf("%s run %d differs", format, i+2)
			}
		}
	}
}

func TestTextOutput(t *testing.T) {
	out := string(render(t, violationReport(t), "text"))
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	r := violationReport(t)
	if len(ls) != len(r.Findings)+1 {
		t.Fatalf("%d lines for %d findings:\n%s", len(ls), len(r.Findings), out)
	}
	want := `events.jsonl:7: error: unsealed-tool: tool "delete_file" was used but is not listed in the seal (sealed: read_file, list_dir, write_file) [event e6, rpc "del-1", seal tools]`
	if !strings.Contains(out, want+"\n") {
		t.Errorf("missing line\n%s\nin\n%s", want, out)
	}
	if !strings.HasPrefix(ls[len(ls)-1], "verdict: incomplete (exit 4): 2 errors, 1 warning, 5 notices; also violation: 2 findings; seal ") {
		t.Errorf("verdict line %q", ls[len(ls)-1])
	}
}

func TestJSONOutput(t *testing.T) {
	var got map[string]any
	if err := json.Unmarshal(render(t, violationReport(t), "json"), &got); err != nil {
		t.Fatal(err)
	}
	if got["format"] != reportFormat || got["v"] != float64(1) || got["verdict"] != "incomplete" || got["exit_code"] != float64(4) {
		t.Errorf("header: %v %v %v %v", got["format"], got["v"], got["verdict"], got["exit_code"])
	}
	var rpc []any
	for _, f := range got["findings"].([]any) {
		m := f.(map[string]any)
		if v, ok := m["rpc_id"]; ok {
			rpc = append(rpc, v)
		}
	}
	// the exact tokens: a string and a number
	if len(rpc) != 2 || rpc[0] != "del-1" || rpc[1] != float64(42) {
		t.Errorf("rpc ids %#v", rpc)
	}
	// the optional checks (a joined run, a seal with untrusted) did not run
	if len(got["checks"].([]any)) != len(checks)-len(optionalChecks) {
		t.Errorf("checks: %v", got["checks"])
	}
}

// TestSARIFRequired checks the output against the properties SARIF 2.1.0's
// schema requires (sarif-schema-2.1.0.json: sarifLog.version/runs,
// run.tool, tool.driver, toolComponent.name, reportingDescriptor.id,
// result.message, message.text, region.startLine >= 1, invocation.
// executionSuccessful) and its enumerations and index cross-references.
func TestSARIFRequired(t *testing.T) {
	for _, r := range []*Report{violationReport(t), func() *Report {
		plan := testPlan()
		return runCheck(t, plan, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}), signedOpts())
	}()} {
		var log map[string]any
		if err := json.Unmarshal(render(t, r, "sarif"), &log); err != nil {
			t.Fatal(err)
		}
		checkSARIF(t, log, len(r.Findings))
	}
}

func checkSARIF(t *testing.T, log map[string]any, nresults int) {
	t.Helper()
	need := func(m map[string]any, key, where string) any {
		v, ok := m[key]
		if !ok {
			t.Fatalf("%s: required property %q missing", where, key)
		}
		return v
	}
	obj := func(v any, where string) map[string]any {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object: %T", where, v)
		}
		return m
	}
	arr := func(v any, where string) []any {
		a, ok := v.([]any)
		if !ok {
			t.Fatalf("%s: not an array: %T", where, v)
		}
		return a
	}
	str := func(v any, where string) string {
		s, ok := v.(string)
		if !ok || s == "" {
			t.Fatalf("%s: not a non-empty string: %v", where, v)
		}
		return s
	}
	if need(log, "version", "sarifLog") != "2.1.0" {
		t.Fatalf("version %v", log["version"])
	}
	if s, ok := log["$schema"].(string); ok && !strings.Contains(s, "sarif-2.1.0") {
		t.Errorf("$schema %q", s)
	}
	runs := arr(need(log, "runs", "sarifLog"), "runs")
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	run := obj(runs[0], "runs[0]")
	driver := obj(need(obj(need(run, "tool", "run"), "tool"), "driver", "tool"), "driver")
	str(need(driver, "name", "toolComponent"), "driver.name")
	levels := map[string]bool{"none": true, "note": true, "warning": true, "error": true}
	var ruleIDs []string
	if rs, ok := driver["rules"]; ok {
		for i, rv := range arr(rs, "rules") {
			rule := obj(rv, "rule")
			ruleIDs = append(ruleIDs, str(need(rule, "id", "reportingDescriptor"), "rule.id"))
			for _, d := range []string{"shortDescription", "fullDescription"} {
				if dv, ok := rule[d]; ok {
					str(need(obj(dv, d), "text", "multiformatMessageString"), d+".text")
				}
			}
			if dc, ok := rule["defaultConfiguration"]; ok {
				if lv, ok := obj(dc, "defaultConfiguration")["level"]; ok && !levels[lv.(string)] {
					t.Errorf("rule %d level %v", i, lv)
				}
			}
		}
	}
	for _, iv := range arr(need(run, "invocations", "run"), "invocations") {
		if _, ok := need(obj(iv, "invocation"), "executionSuccessful", "invocation").(bool); !ok {
			t.Error("executionSuccessful not a bool")
		}
	}
	var artifacts []any
	if a, ok := run["artifacts"]; ok {
		artifacts = arr(a, "artifacts")
	}
	results := arr(need(run, "results", "run"), "results")
	if len(results) != nresults {
		t.Errorf("%d results, want %d", len(results), nresults)
	}
	for i, rv := range results {
		res := obj(rv, "result")
		msg := obj(need(res, "message", "result"), "message")
		str(need(msg, "text", "message"), "message.text")
		if lv, ok := res["level"]; ok && !levels[lv.(string)] {
			t.Errorf("result %d level %v", i, lv)
		}
		id := str(need(res, "ruleId", "result"), "ruleId")
		if ri, ok := res["ruleIndex"]; ok {
			k := int(ri.(float64))
			if k < -1 || k >= len(ruleIDs) || ruleIDs[k] != id {
				t.Errorf("result %d ruleIndex %d does not point at rule %s", i, k, id)
			}
		}
		if pf, ok := res["partialFingerprints"]; ok {
			for k, v := range obj(pf, "partialFingerprints") {
				str(v, "partialFingerprints."+k)
			}
		}
		locs, _ := res["locations"].([]any)
		for _, lv := range locs {
			loc := obj(lv, "location")
			if pv, ok := loc["physicalLocation"]; ok {
				ph := obj(pv, "physicalLocation")
				al := obj(need(ph, "artifactLocation", "physicalLocation"), "artifactLocation")
				uri := str(need(al, "uri", "artifactLocation"), "uri")
				if idx, ok := al["index"]; ok {
					k := int(idx.(float64))
					if k < 0 || k >= len(artifacts) || obj(obj(artifacts[k], "artifact")["location"], "artifact.location")["uri"] != uri {
						t.Errorf("artifact index %d does not name %s", k, uri)
					}
				}
				if rg, ok := ph["region"]; ok {
					if sl := obj(rg, "region")["startLine"].(float64); sl < 1 {
						t.Errorf("startLine %v", sl)
					}
				}
			}
		}
	}
}

type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Tests int    `xml:"tests,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type string `xml:"type,attr"`
				Text string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitParsesBack(t *testing.T) {
	r := violationReport(t)
	var doc junitDoc
	if err := xml.Unmarshal(render(t, r, "junit"), &doc); err != nil {
		t.Fatal(err)
	}
	listed := len(checks) - len(optionalChecks)
	if len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != listed || doc.Tests != listed {
		t.Fatalf("suites %+v", doc)
	}
	failed := map[string]string{}
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failed[strings.SplitN(c.Name, ":", 2)[0]] = c.Failure.Type
			if !strings.Contains(c.Failure.Text, "events.jsonl:") {
				t.Errorf("failure text %q", c.Failure.Text)
			}
		}
	}
	want := map[string]string{checkChain: "incomplete", checkUnsealed: "violation", checkScope: "violation"}
	if len(failed) != len(want) || doc.Failures != len(want) {
		t.Errorf("failed cases %v, want %v", failed, want)
	}
	for k, v := range want {
		if failed[k] != v {
			t.Errorf("case %s: failure type %q, want %q", k, failed[k], v)
		}
	}
	// a clean capture: no failures
	plan := testPlan()
	clean := runCheck(t, plan, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}), signedOpts())
	var cdoc junitDoc
	if err := xml.Unmarshal(render(t, clean, "junit"), &cdoc); err != nil {
		t.Fatal(err)
	}
	if cdoc.Failures != 0 {
		t.Errorf("clean capture: %d failures", cdoc.Failures)
	}
}

// Every finding code is described for SARIF and listed in
// docs/design/verdicts.md, and every code the package emits is described.
func TestCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "design", "verdicts.md"))
	if err != nil {
		t.Fatal(err)
	}
	for code, info := range codes {
		if info.Short == "" || info.Help == "" {
			t.Errorf("code %s: no description", code)
		}
		if code == "log-findings-dropped" || code == "findings-dropped" {
			continue
		}
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("code %s is not in docs/design/verdicts.md", code)
		}
	}
	re := regexp.MustCompile(`Code: +"([a-z-]+)"[,}]`)
	for _, f := range []string{"check.go", "events.go", "graph.go", "run.go", "report.go", "surface.go", "join.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			if _, ok := codes[m[1]]; !ok {
				t.Errorf("%s emits code %s, which codes.go does not describe", f, m[1])
			}
		}
	}
	for _, c := range []string{eventlog.FindParse, eventlog.FindCanonical, eventlog.FindChain, eventlog.FindSeq, eventlog.FindID,
		eventlog.FindSession, eventlog.FindHeader, eventlog.FindPayload, eventlog.FindLink, eventlog.FindEnd, eventlog.FindSignature,
		eventlog.FindUnsigned, eventlog.FindUntrusted, eventlog.FindPartial, eventlog.FindNoEnd, eventlog.FindEmpty, eventlog.FindFailure} {
		code := "log-" + strings.ReplaceAll(c, "_", "-")
		if _, ok := codes[code]; !ok {
			t.Errorf("chain code %s not described", code)
		}
	}
}

// The text report sums up the notices of two or more checks that could
// not run in one line, where the first was, unless verbose; one such
// notice is printed as it is. The other findings are untouched.
func TestNotCheckableSummary(t *testing.T) {
	r := &Report{Evidence: Evidence{File: "run.jsonl"}, Findings: []Finding{
		{Check: "unsealed-tool", Code: "unsealed-tool", Severity: SevError, Class: classViolation, Message: "tool x is not sealed"},
		{Check: "system-prompt", Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, File: "run.jsonl", Message: "system-prompt not checkable: no model input"},
		{Check: "sampling", Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, File: "run.jsonl", Message: "sampling not checkable: the seal is silent"},
		{Check: "elicitation", Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, File: "run.jsonl", Message: "elicitation not checkable: the seal is silent"},
	}}
	var quiet, verbose bytes.Buffer
	if err := r.WriteText(&quiet, false); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&verbose, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(quiet.String()), "\n")
	want := "run.jsonl: notice: not-checkable: 3 checks not checkable: system-prompt, sampling, elicitation; --verbose lists them with their reasons"
	if len(lines) != 3 || lines[1] != want || !strings.Contains(lines[0], "unsealed-tool") {
		t.Errorf("summary report:\n%s\nwant its second line %q", quiet.String(), want)
	}
	if n := strings.Count(verbose.String(), "not-checkable: "); n != 3 || strings.Contains(verbose.String(), "--verbose") {
		t.Errorf("verbose report lists %d not-checkable notices, want 3:\n%s", n, verbose.String())
	}
	r.Findings = r.Findings[:2]
	var one bytes.Buffer
	if err := r.WriteText(&one, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(one.String(), "system-prompt not checkable: no model input") {
		t.Errorf("one notice was summed up:\n%s", one.String())
	}
}
