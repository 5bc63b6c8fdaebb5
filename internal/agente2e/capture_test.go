package agente2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// wantTools is what the scripted model asks for, in order: the poisoned
// read, the overwrite it asks for, an echo on the HTTP server.
var wantTools = []string{"read_text_file", "write_file", "echo"}

// checkRun checks what one run did and recorded: the agent finished with
// a final answer after running the three tool calls, the write really
// happened (precious.txt says pwned, the inbox note is untouched), each
// channel's log holds its part of the story, and each log verifies on its
// own (`witness verify --events LOG`: exit 0, signed by the keyring).
func (k *kit) checkRun(t *testing.T, fw framework, r *agentRun) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s", fw.program, r.code, tail(r.stderr))
	}
	var said struct {
		Final string   `json:"final"`
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &said); err != nil {
		t.Fatalf("%s printed %q: %v", fw.program, r.stdout, err)
	}
	if !strings.Contains(said.Final, "precious.txt now says pwned") || !slices.Equal(said.Tools, wantTools) {
		t.Errorf("%s: final %q after tools %v, want the scripted answer after %v", fw.program, said.Final, said.Tools, wantTools)
	}
	if b, err := os.ReadFile(filepath.Join(r.work, "precious.txt")); err != nil || string(b) != "pwned" {
		t.Errorf("precious.txt holds %q (%v), want %q: the overwrite did not happen", b, err, "pwned")
	}
	if b, err := os.ReadFile(filepath.Join(r.work, "inbox", "poisoned.txt")); err != nil || string(b) != poisonedText {
		t.Errorf("inbox/poisoned.txt changed: %q (%v)", b, err)
	}
	if fw.probes && r.fsStart != 2 || !fw.probes && r.fsStart != 1 {
		t.Errorf("the stdio server command was started %d times, want %d (probe: %v)", r.fsStart, map[bool]int{true: 2, false: 1}[fw.probes], fw.probes)
	}

	if names, _ := toolCalls(t, r.fs); !slices.Equal(names, []string{"read_text_file", "write_file"}) {
		t.Errorf("fs log: tool calls %v, want read_text_file, write_file", names)
	}
	if names, _ := toolCalls(t, r.every); !slices.Equal(names, []string{"echo"}) {
		t.Errorf("everything log: tool calls %v, want echo", names)
	}
	var inputs, outputs int
	var sawWrite, sawPoison bool
	for _, e := range readEvents(t, r.model) {
		raw, _ := json.Marshal(e)
		switch e.Kind {
		case "model_input":
			inputs++
			sawPoison = sawPoison || bytes.Contains(raw, []byte("overwrite precious.txt"))
		case "model_output":
			outputs++
			sawWrite = sawWrite || bytes.Contains(raw, []byte("write_file"))
		}
	}
	if inputs != 4 || outputs != 4 || !sawWrite || !sawPoison {
		t.Errorf("model log: %d model_input, %d model_output (want 4 and 4); an output asks for write_file: %v; an input carries the poisoned text back: %v", inputs, outputs, sawWrite, sawPoison)
	}
	for _, log := range []string{r.model, r.fs, r.every} {
		if code, out := k.run(t, "verify", "--events", log, "--keyring", k.keys); code != 0 {
			t.Errorf("witness verify --events %s: exit %d, want 0\n%s", log, code, out)
		}
	}
}

// TestAgentCapture runs the story once with each framework and checks the
// run and its three logs (checkRun). With ATW_AGENT_RECORD=DIR it also
// copies each framework's logs to DIR/<framework>/{model,fs,everything}/
// and writes the seal spec of the story (DIR/agent.json) and the public
// half of the signing key (DIR/trust.json) for the demo;
// the work directory is then ATW_AGENT_ROOT (default
// /tmp/witness-agent-demo), so that the recorded paths name no machine.
func TestAgentCapture(t *testing.T) {
	k := needKit(t)
	record := os.Getenv("ATW_AGENT_RECORD")
	for _, fw := range frameworks {
		t.Run(fw.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			if record != "" {
				work = os.Getenv("ATW_AGENT_ROOT")
				if work == "" {
					work = "/tmp/witness-agent-demo"
				}
				t.Cleanup(func() { os.RemoveAll(work) })
			}
			r := k.runStory(t, fw, work, filepath.Join(t.TempDir(), "out"))
			k.checkRun(t, fw, r)
			if record != "" && !t.Failed() {
				for _, l := range []string{r.model, r.fs, r.every} {
					k.collect(t, l, filepath.Join(record, fw.name, filepath.Base(filepath.Dir(l))))
				}
				if err := os.WriteFile(filepath.Join(record, "agent.json"), sealSpec(work), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, out := k.run(t, "key", "export-public", "--keyring", k.keys, "--out", filepath.Join(record, "trust.json"), "--force"); code != 0 {
					t.Fatalf("witness key export-public: exit %d\n%s", code, out)
				}
			}
		})
	}
}

// TestAgentCaptureDeterministic runs the story ten times per framework
// with the same work directory, upstream ports and frozen time and
// compares each log with the first run's, byte for byte: the model and fs
// logs whole; the everything log after sessionNeutral, because
// server-everything gives each session a random Mcp-Session-Id
// (docs/design/agent-e2e.md, "Determinism").
func TestAgentCaptureDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("ten runs per framework")
	}
	k := needKit(t)
	for _, fw := range frameworks {
		t.Run(fw.name, func(t *testing.T) {
			base := t.TempDir()
			work := filepath.Join(base, "work")
			out := filepath.Join(base, "out")
			var first [3][]byte
			for i := 0; i < 10; i++ {
				os.RemoveAll(out)
				r := k.runStory(t, fw, work, out)
				k.checkRun(t, fw, r)
				for j, l := range []string{r.model, r.fs, r.every} {
					b, err := os.ReadFile(l)
					if err != nil {
						t.Fatal(err)
					}
					if l == r.every {
						b = sessionNeutral(t, b)
					}
					if i == 0 {
						first[j] = b
					} else if !bytes.Equal(first[j], b) {
						t.Errorf("run %d: %s differs from run 1 %s", i+1, filepath.Base(filepath.Dir(l)), firstDiff(first[j], b))
					}
				}
				if t.Failed() {
					return
				}
			}
			t.Logf("10 runs: model %d bytes, fs %d bytes, everything %d bytes, identical", len(first[0]), len(first[1]), len(first[2]))
		})
	}
}

// mcpSessionID finds the Mcp-Session-Id that the header of an HTTP MCP
// session log quotes ("MCP session N over streamable-http through the HTTP
// proxy of URL (ID)").
var mcpSessionID = regexp.MustCompile(`over streamable-http through the HTTP proxy of \S+ \(([0-9a-f-]{36})\)`)

// sessionNeutral returns an HTTP MCP session log with its Mcp-Session-Id
// replaced by a placeholder and the members that hash it removed, each
// line re-encoded (sorted keys), so that two runs compare equal exactly
// when they differ in nothing else. It fails the test when the log quotes
// no session id: the normalisation must not hide a format change.
func sessionNeutral(t *testing.T, b []byte) []byte {
	t.Helper()
	m := mcpSessionID.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the HTTP MCP session log quotes no Mcp-Session-Id in its header:\n%.400s", b)
	}
	b = bytes.ReplaceAll(b, m[1], []byte("<mcp-session-id>"))
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%v: %.200s", err, line)
		}
		drop(v)
		nb, _ := json.Marshal(v)
		out.Write(append(nb, '\n'))
	}
	return out.Bytes()
}

// drop removes the members of a log line that follow from the header
// bytes: the session id (it hashes the header), prev (the hash of the line
// before), and the end's head and signatures.
func drop(v any) {
	line, ok := v.(map[string]any)
	if !ok {
		return
	}
	delete(line, "session")
	delete(line, "prev")
	if end, ok := line["end"].(map[string]any); ok {
		delete(end, "head")
		delete(end, "signatures")
	}
}

// sealSpec is the seal spec of the story for the work directory root:
// read_text_file may read the inbox, echo is sealed without scopes, and
// write_file is not sealed at all; what read_text_file reads under the
// inbox is untrusted (external content: the contract's "untrusted").
func sealSpec(root string) []byte {
	spec := map[string]any{
		"system_prompt": instructions,
		"witness_id":    "witness-agent-e2e",
		"tools": []any{
			map[string]any{"name": "read_text_file", "scopes": []string{"read:" + root + "/inbox/**"}},
			map[string]any{"name": "echo", "scopes": []string{}},
		},
		"untrusted": []string{"tool:read_text_file:read:" + root + "/inbox/**"},
	}
	b, _ := json.MarshalIndent(spec, "", "  ")
	return append(b, '\n')
}
