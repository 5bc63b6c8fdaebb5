package httpproxy

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A host that runs the model's tool calls as soon as its SDK hands them
// over (testdata/peers/eagerhost.mjs: openai 7.55 raw stream iteration,
// @anthropic-ai/sdk MessageStream contentBlock events) and goes on when
// the stream then fails (a Chat error chunk, an Anthropic overloaded
// error event), sending the tool's result back: through the model proxy,
// verify calls the run incomplete (failed-answer-acted-on, naming the
// failed answer and the request that acted on it; the unit test
// TestFailedAnswerActedOn covers a seal too). The same host on answers that complete verifies (issue 31 item 4).
func TestHostActsOnFailedAnswer(t *testing.T) {
	node, peers := peersNode(t)
	root := testrepo.Root(t)
	bins := t.TempDir()
	ms := goBuild(t, "./testdata/modelserver", bins)
	witness := goBuild(t, "./cmd/witness", bins)
	work := t.TempDir()
	env := []string{eventlog.EnvTS + "=2026-08-30T14:33:00+00:00", "WITNESS_KEYRING=" + filepath.Join(work, "keys.json"), "HOME=" + work}
	if out, err := exec.Command(witness, "keygen", "--keyring", filepath.Join(work, "keys.json")).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	model := startDaemon(t, nil, ms, "-listen", "127.0.0.1:0", "-script", filepath.Join(root, "testdata", "modelserver", "scripts", "eager-host.json"))
	for _, tc := range []struct {
		scenario, call, status string
		failed                 bool
	}{
		{"chat-error", "call_eager0001", "error", true},
		{"anthropic-overloaded", "toolu_eager0001", "error", true},
		{"chat-ok", "call_eager0001", "", false},
		{"anthropic-ok", "toolu_eager0001", "", false},
	} {
		rec := filepath.Join(work, tc.scenario)
		px := startDaemon(t, env, witness, "proxy", "--out", rec, "--listen", "127.0.0.1:0", "--upstream", model.URL)
		host := exec.Command(node, "eagerhost.mjs", px.URL, tc.scenario)
		host.Dir = peers
		out, err := host.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: eagerhost: %v\n%s", tc.scenario, err, out)
		}
		if code := px.stop(t); code != 0 {
			t.Fatalf("%s: proxy exit %d\n%s", tc.scenario, code, px.stderr.String())
		}
		// the host did run the call, and saw the SDK fail where it should
		ranCall := strings.Contains(string(out), `"ran":[{"id":"`+tc.call+`"`)
		sdkFailed := !strings.Contains(string(out), `"error":null`)
		if !ranCall || sdkFailed != tc.failed {
			t.Fatalf("%s: the host printed %s", tc.scenario, out)
		}
		events := filepath.Join(rec, derive.EventsFile)
		for _, args := range [][]string{{"verify", "--events", events}, {"verify", "--events", events, "--json"}} {
			cmd := exec.Command(witness, args...)
			cmd.Env = append(cmd.Environ(), env...)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := stdout.String()
			has := strings.Contains(got, "failed-answer-acted-on")
			switch {
			case tc.failed && (code != 4 || !has || !strings.Contains(got, tc.call) || !strings.Contains(got, "whose status is "+tc.status)):
				t.Errorf("%s %v: exit %d, want 4 with failed-answer-acted-on naming %s:\n%s", tc.scenario, args[3:], code, tc.call, got)
			case !tc.failed && (code != 0 || has):
				t.Errorf("%s %v: exit %d, want 0 (verified):\n%s", tc.scenario, args[3:], code, got)
			}
		}
	}
}
