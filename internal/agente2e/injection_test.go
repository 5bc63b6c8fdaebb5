package agente2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentInjection judges one run of each framework as one run across
// its three logs (issue 15, docs/design/causal-join.md):
//
//   - `witness verify --events model --events fs --events everything
//     --seal S` is a violation (exit 1) with an injection-provenance
//     finding: the unsealed write_file is causally downstream of the
//     untrusted read under the inbox;
//   - `witness why fs:<write> --json` prints a chain that reaches the
//     poisoned read_text_file in the fs log, through the model channel;
//   - `witness replay --remove fs:<read>` puts the write in the
//     compensation set.
func TestAgentInjection(t *testing.T) {
	k := needKit(t)
	for _, fw := range frameworks {
		t.Run(fw.name, func(t *testing.T) {
			base := t.TempDir()
			work := filepath.Join(base, "work")
			r := k.runStory(t, fw, work, filepath.Join(base, "out"))
			k.checkRun(t, fw, r)
			if t.Failed() {
				return
			}
			names, ids := toolCalls(t, r.fs)
			read, write := ids[slices.Index(names, "read_text_file")], ids[slices.Index(names, "write_file")]
			readResp := responseTo(t, r.fs, read)

			spec := filepath.Join(base, "agent.json")
			if err := os.WriteFile(spec, sealSpec(work), 0o644); err != nil {
				t.Fatal(err)
			}
			seal := filepath.Join(base, "seal.json")
			if code, out := k.run(t, "seal", "--spec", spec, "--out", seal, "--keyring", k.keys); code != 0 {
				t.Fatalf("witness seal: exit %d\n%s", code, out)
			}

			t.Run("verify", func(t *testing.T) {
				args := append(append([]string{"verify"}, r.logs()...), "--seal", seal, "--keyring", k.keys)
				code, out := k.run(t, args...)
				if code != 1 || !strings.Contains(out, "injection-provenance") || !strings.Contains(out, "write_file") {
					t.Errorf("witness %s: exit %d, want 1 with an injection-provenance finding naming write_file\n%s", strings.Join(args, " "), code, out)
				}
				t.Logf("witness verify (joined):\n%s", out)
			})

			t.Run("why", func(t *testing.T) {
				args := append(append([]string{"why", "fs:" + write}, r.logs()...), "--seal", seal, "--json")
				code, out := k.run(t, args...)
				if code != 0 {
					t.Fatalf("witness %s: exit %d\n%s", strings.Join(args, " "), code, out)
				}
				var got struct {
					Node  string `json:"node"`
					Chain []struct {
						Event   string `json:"event"`
						Log     string `json:"log"`
						Kind    string `json:"kind"`
						Excerpt string `json:"excerpt"`
					} `json:"chain"`
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("witness why --json: %v\n%s", err, out)
				}
				var reachesRead, viaModel bool
				for _, step := range got.Chain {
					reachesRead = reachesRead || step.Log == "fs" && (step.Event == read || step.Event == readResp)
					viaModel = viaModel || step.Log == "model"
				}
				if !reachesRead || !viaModel {
					t.Errorf("why fs:%s: the chain reaches the poisoned read (fs:%s or fs:%s): %v; passes through the model channel: %v\n%s", write, read, readResp, reachesRead, viaModel, out)
				}
				_, text := k.run(t, append([]string{"why", "fs:" + write}, r.logs()...)...)
				t.Logf("witness why fs:%s:\n%s", write, text)
			})

			t.Run("replay", func(t *testing.T) {
				args := append(append([]string{"replay"}, r.logs()...), "--remove", "fs:"+read, "--format", "json")
				code, out := k.run(t, args...)
				if code != 0 {
					t.Fatalf("witness %s: exit %d\n%s", strings.Join(args, " "), code, out)
				}
				var got struct {
					Compensation []struct {
						Node string `json:"node"`
						Kind string `json:"kind"`
						Tool string `json:"tool"`
					} `json:"compensation_set"`
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("witness replay --format json: %v\n%.2000s", err, out)
				}
				var tools []string
				for _, c := range got.Compensation {
					if c.Tool != "" {
						tools = append(tools, c.Tool)
					}
				}
				if !slices.Contains(tools, "write_file") {
					t.Errorf("replay --remove fs:%s: the compensation set's tools are %v, want write_file among them\n%.2000s", read, tools, out)
				}
			})
		})
	}
}

// responseTo returns the id of the tool_response to the call id in log.
func responseTo(t *testing.T, log, id string) string {
	t.Helper()
	for _, e := range readEvents(t, log) {
		if e.Kind == "tool_response" && e.Call == id {
			return e.ID
		}
	}
	t.Fatalf("%s: no tool_response to %s", log, id)
	return ""
}
