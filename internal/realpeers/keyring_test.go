package realpeers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrippedEnvironmentSigns is issue 34's "one keyring, everywhere"
// with a real host: the TypeScript SDK's StdioClientTransport started
// without an env passes the server only getDefaultEnvironment() (HOME,
// LOGNAME, PATH, SHELL, TERM, USER on POSIX). `witness proxy` behind it
// still finds the default keyring that `witness key generate` made
// ($HOME/.config/witness/keys.json: XDG_CONFIG_HOME is stripped too), so
// the log is signed and verify says verified. The host's own environment
// names another keyring and config folder, which the proxy does see when
// the host passes its whole environment: the control run is unsigned.
func TestStrippedEnvironmentSigns(t *testing.T) {
	p := needPeers(t)
	wit := witness(t, p.root)
	home := t.TempDir()
	gen := exec.Command(wit, "key", "generate")
	gen.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, err := gen.CombinedOutput()
	if err != nil {
		t.Fatalf("witness key generate: %v\n%s", err, out)
	}
	want := filepath.Join(home, ".config", "witness", "keys.json")
	if !strings.Contains(string(out), "algorithm=ed25519 backend=file -> "+want) {
		t.Fatalf("witness key generate wrote elsewhere than %s:\n%s", want, out)
	}
	root := filepath.Join(t.TempDir(), "root")
	resetRoot(t, root)
	steps := []byte(`[{"waitFor": "roots/list"}, {"call": "tools/list"},
 {"call": "tools/call", "params": {"name": "list_allowed_directories", "arguments": {}}}]`)
	// what the host has and a stripping host does not pass on
	hostEnv := []string{"WITNESS_KEYRING=" + filepath.Join(home, "none.json"), "XDG_CONFIG_HOME=" + filepath.Join(home, "elsewhere")}
	run := func(rec string, defaultEnv bool) *hostResult {
		return p.runHost(t, hostRun{
			script: steps, roots: []string{root}, home: home, hostEnv: hostEnv, defaultEnv: defaultEnv,
			server: proxied(wit, rec, []string{p.node, p.filesystem, root}),
		})
	}
	dir := t.TempDir()
	stripped := run(filepath.Join(dir, "stripped"), true)
	if strings.Contains(stripped.stderr, "unsigned") {
		t.Errorf("the proxy under a stripped environment warned that it cannot sign:\n%s", tail(stripped.stderr))
	}
	if code, v := verifyEvents(t, wit, home, filepath.Join(dir, "stripped", "events.jsonl")); code != 0 || !strings.Contains(v, "verdict: verified") {
		t.Errorf("verify of the stripped-environment log: exit %d, want 0 and verified:\n%s", code, v)
	}
	whole := run(filepath.Join(dir, "whole"), false)
	if !strings.Contains(whole.stderr, "witness: warning: unsigned: no keyring") {
		t.Errorf("control: with the host's whole environment ($WITNESS_KEYRING naming no file) the proxy should not sign:\n%s", tail(whole.stderr))
	}
	if code, v := verifyEvents(t, wit, home, filepath.Join(dir, "whole", "events.jsonl")); code != 4 {
		t.Errorf("control: verify of the unsigned log: exit %d, want 4 (incomplete):\n%s", code, v)
	}
}

// verifyEvents runs `witness verify --events LOG` with HOME=home (so the
// default keyring verifies) and returns its exit code and output.
func verifyEvents(t *testing.T, wit, home, log string) (int, string) {
	t.Helper()
	cmd := exec.Command(wit, "verify", "--events", log)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), b.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, b.String()
}
