package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/seal"
)

// TestProfileEventsLog runs Run over the event log named by
// $WITNESS_VERIFY_PROFILE_LOG (skipped without it), with the 0.1.0 seal the
// scale bench uses, so that `go test -run TestProfileEventsLog
// -cpuprofile` profiles verify as `witness verify --seal S --events LOG`
// runs it (docs/design/scale.md).
func TestProfileEventsLog(t *testing.T) {
	log := os.Getenv("WITNESS_VERIFY_PROFILE_LOG")
	if log == "" {
		t.Skip("set WITNESS_VERIFY_PROFILE_LOG to an event log to profile verify on it")
	}
	root := testrepo.Root(t)
	r, err := Run(Options{
		SealFile:   filepath.Join(root, "testdata/compat/atw-0.1.0/seal_without_damaging_tool.json"),
		EventsFile: log,
		SealKeys:   seal.VerifyOptions{LegacyKeyHex: strings.Repeat("0", 64)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events, %d findings, verdict %s", log, r.Evidence.Events, len(r.Findings), r.Verdict)
}

// TestProfileGraph runs Run over the graph named by
// $WITNESS_VERIFY_PROFILE_GRAPH (skipped without it), with the 0.1.0 seal
// the scale bench uses, so that `go test -run TestProfileGraph
// -cpuprofile` profiles `witness verify --seal S --graph G`.
func TestProfileGraph(t *testing.T) {
	g := os.Getenv("WITNESS_VERIFY_PROFILE_GRAPH")
	if g == "" {
		t.Skip("set WITNESS_VERIFY_PROFILE_GRAPH to a graph to profile verify on it")
	}
	root := testrepo.Root(t)
	r, err := Run(Options{
		SealFile:  filepath.Join(root, "testdata/compat/atw-0.1.0/seal_without_damaging_tool.json"),
		GraphFile: g,
		SealKeys:  seal.VerifyOptions{LegacyKeyHex: strings.Repeat("0", 64)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events, %d findings, verdict %s", g, r.Evidence.Events, len(r.Findings), r.Verdict)
}
