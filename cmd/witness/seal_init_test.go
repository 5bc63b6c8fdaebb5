package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/keyring"
)

// TestSealInitURL surveys server-everything in streamableHttp mode with
// `witness seal init --url` and the same server over stdio with
// `-- node index.js stdio`: both specs pin the same tools (names,
// definition_sha256, annotations) and list the same resources and prompts
// with --surface. The --url spec seals, and a session captured over HTTP
// against that seal verifies (its pins are the ones verify compares).
func TestSealInitURL(t *testing.T) {
	everything := filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(everything)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peer server-everything missing (%v): run 'make peers'", err)
		}
		t.Skipf("npm peer server-everything missing (%v): run 'make peers'", err)
	}
	base := startEverything(t, confPeers{node: node, everything: everything})

	dir := t.TempDir()
	kr := filepath.Join(dir, "keys.json")
	if _, err := keyring.Generate(kr, keyring.Options{}, keyring.AlgEd25519); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ATW_WITNESS_TS": "2026-08-30T14:33:00+00:00", "PATH": os.Getenv("PATH"), "WITNESS_KEYRING": kr}
	witness := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(args, newApp(strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] }))
		return stdout.String(), stderr.String(), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := witness(args...)
		if code != 0 {
			t.Fatalf("witness %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	prompt := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(prompt, []byte("You echo.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	httpSpec, stdioSpec := filepath.Join(dir, "http.json"), filepath.Join(dir, "stdio.json")
	must("seal", "init", "--out", httpSpec, "--system-prompt", prompt, "--surface", "--url", base+"/mcp", "--header", "X-Test: 1")
	must("seal", "init", "--out", stdioSpec, "--system-prompt", prompt, "--surface", "--", node, everything, "stdio")
	type spec struct {
		Tools []struct {
			Name             string          `json:"name"`
			DefinitionSHA256 string          `json:"definition_sha256"`
			Annotations      json.RawMessage `json:"annotations"`
		} `json:"tools"`
		Resources []string `json:"resources"`
		Prompts   []string `json:"prompts"`
	}
	read := func(path string) ([]byte, spec) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var s spec
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return data, s
	}
	hb, hs := read(httpSpec)
	sb, ss := read(stdioSpec)
	if len(hs.Tools) == 0 || len(hs.Resources) == 0 || len(hs.Prompts) == 0 {
		t.Fatalf("the --url spec lacks tools, resources or prompts:\n%s", hb)
	}
	ht, _ := json.Marshal(hs.Tools)
	st, _ := json.Marshal(ss.Tools)
	if !bytes.Equal(ht, st) {
		t.Fatalf("the --url survey pins other tools than the stdio survey:\n%s\n---\n%s", ht, st)
	}
	if !bytes.Equal(hb, sb) {
		t.Fatalf("the two specs differ:\n%s\n---\n%s", hb, sb)
	}
	t.Logf("server-everything: %d tools, %d resources, %d prompts; --url and stdio specs byte for byte equal (%d bytes)", len(hs.Tools), len(hs.Resources), len(hs.Prompts), len(hb))

	// the --url spec seals as is, and verify accepts a session over HTTP
	// against it: the tool-definitions check passes
	sealFile := filepath.Join(dir, "seal.json")
	must("seal", "--spec", httpSpec, "--out", sealFile)
	calls := filepath.Join(dir, "calls.json")
	if err := os.WriteFile(calls, []byte(`[{"tool":"echo","arguments":{"message":"hi"}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "rec")
	must("capture", "--out", rec, "--scenario", calls, "--seal", sealFile, "--url", base+"/mcp")
	out := must("verify", "--seal", sealFile, "--events", filepath.Join(rec, "events.jsonl"))
	if !strings.Contains(out, "verdict: verified") {
		t.Fatalf("verify:\n%s", out)
	}
}
