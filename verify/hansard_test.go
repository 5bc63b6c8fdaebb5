package verify

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/seal"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const compatDir = "../testdata/compat/atw-0.1.0"

// importHansard converts the 0.1.0 HANSARD fixture into a witness event log
// signed with testKey, in dir.
func importHansard(t *testing.T, dir string) string {
	t.Helper()
	in, err := os.ReadFile(filepath.Join(compatDir, "hansard_scenario_1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := derive.ImportATW(bytes.NewReader(in), &out, derive.ImportOptions{
		Name: "hansard_scenario_1.jsonl", TS: testTS, Signers: []eventlog.Signer{testKey},
	}); err != nil {
		t.Fatalf("import: %v", err)
	}
	p := filepath.Join(dir, "hansard.events.jsonl")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// HANSARD (spec §9): the imported 0.1.0 log verified against its seal
// reports delete_file as unsealed and the fixture's seal_ref mismatch.
func TestHansard(t *testing.T) {
	events := importHansard(t, t.TempDir())
	r, err := Run(Options{
		SealFile:    filepath.Join(compatDir, "seal_without_damaging_tool.json"),
		EventsFile:  events,
		SealKeys:    seal.VerifyOptions{LegacyKeyHex: strings.Repeat("0", 64)},
		EndVerifier: testKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	r.WriteText(&text, true)
	t.Log("\n" + text.String())
	if r.Verdict != Violation {
		t.Errorf("verdict %s, want violation", r.Verdict)
	}
	if r.Seal.Digest != "9edc4d89189a690d3e379381523729807a48b325f9b14329a2f25874507fd8d2" {
		t.Errorf("seal digest %s (spec §4.4 gives 9edc4d89…)", r.Seal.Digest)
	}
	var unsealed []Finding
	for _, f := range r.Findings {
		if f.Code == "unsealed-tool" {
			unsealed = append(unsealed, f)
		}
	}
	if len(unsealed) != 1 || unsealed[0].Tool != "delete_file" || unsealed[0].Class != classViolation || unsealed[0].EventID != "e4" || unsealed[0].Line != 5 {
		t.Errorf("unsealed findings %+v, want one for delete_file at e4 (line 5)", unsealed)
	}
	m := findCode(r, "seal-ref-mismatch")
	if m == nil || !strings.Contains(m.Message, "c6d0e4f55b187bb6aa01c345c1f36fef6167b7c75b33a9480e99d0e77b955707") || !strings.Contains(m.Message, "9edc4d89189a690d3e379381523729807a48b325f9b14329a2f25874507fd8d2") || m.SealClause != "seal_ref" {
		t.Errorf("seal_ref mismatch finding %+v", m)
	}
	if f := findCode(r, "scope-not-checkable"); f == nil || !strings.Contains(f.Message, "without recorded arguments") {
		t.Errorf("0.1.0 keeps no arguments: want a scope-not-checkable notice, got %+v", f)
	}
	for _, c := range r.Checks {
		if c.ID == CheckSeal && c.Status != statusPass {
			t.Errorf("seal check %s", c.Status)
		}
		if c.ID == checkChain && c.Status != statusPass {
			t.Errorf("chain check %s", c.Status)
		}
	}
}

// The same HANSARD events against a seal that lists delete_file and
// carries their seal_ref would be clean: a clean scenario verifies (0).
func TestHansardCleanScenario(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(compatDir, "hansard_scenario_1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// keep only the benign lines (read_file, list_dir)
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
	r := runCheck(t, plan, out.Bytes(), signedOpts())
	if r.Verdict != verified {
		var b bytes.Buffer
		r.WriteText(&b, true)
		t.Fatalf("verdict %s:\n%s", r.Verdict, b.String())
	}
}
