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
	profileRun(t, "WITNESS_VERIFY_PROFILE_LOG", "an event log", func(o *Options, file string) { o.EventsFile = file })
}

// TestProfileGraph runs Run over the graph named by
// $WITNESS_VERIFY_PROFILE_GRAPH (skipped without it), with the 0.1.0 seal
// the scale bench uses, so that `go test -run TestProfileGraph
// -cpuprofile` profiles `witness verify --seal S --graph G`.
func TestProfileGraph(t *testing.T) {
	profileRun(t, "WITNESS_VERIFY_PROFILE_GRAPH", "a graph", func(o *Options, file string) { o.GraphFile = file })
}

// profileRun is the setup of the profiles: the file named by $env (the
// test is skipped without it; what describes it for the skip message),
// given to Run's options by input, with the scale bench's 0.1.0 seal and
// its all-zero legacy key.
func profileRun(t *testing.T, env, what string, input func(o *Options, file string)) {
	t.Helper()
	file := os.Getenv(env)
	if file == "" {
		t.Skipf("set %s to %s to profile verify on it", env, what)
	}
	o := Options{
		SealFile: filepath.Join(testrepo.Root(t), "testdata/compat/atw-0.1.0/seal_without_damaging_tool.json"),
		SealKeys: seal.VerifyOptions{LegacyKeyHex: strings.Repeat("0", 64)},
	}
	input(&o, file)
	r, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events, %d findings, verdict %s", file, r.Evidence.Events, len(r.Findings), r.Verdict)
}
