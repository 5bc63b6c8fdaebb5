package verify

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSARIFSchema validates the SARIF output of several reports against the
// SARIF 2.1.0 JSON schema (testdata/sarif-2.1.0-rtm.5.json), offline, with
// format assertions on.
func TestSARIFSchema(t *testing.T) {
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
		t.Fatalf("compile schema: %v", err)
	}
	plan := testPlan()
	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	reports := map[string]*Report{
		"violation and incomplete": violationReport(t),
		"clean":                    runCheck(t, plan, clean, signedOpts()),
		"tampered":                 runCheck(t, plan, append([]byte("{not json\n"), clean...), signedOpts()),
		"graph":                    runGraph(t, plan, graphOf(t, clean, graph.Options{})),
	}
	abs := violationReport(t)
	abs.Evidence.File = "/var/evidence/events.jsonl"
	reports["absolute path"] = abs
	for name, r := range reports {
		out := render(t, r, "sarif")
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: SARIF output does not validate: %v", name, err)
		}
	}
	// The validator is not vacuous: a result without a message fails.
	bad := bytes.Replace(render(t, violationReport(t), "sarif"), []byte(`"message": {`), []byte(`"messagX": {`), 1)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if err := sch.Validate(inst); err == nil {
		t.Error("a result without message validated")
	}
}
