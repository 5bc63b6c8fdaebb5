package realpeers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/mcp"
)

// server is one real MCP server the TypeScript host drives.
type server struct {
	name   string
	script string // the host's step script, in testdata
	argv   func(p *peers, root string) []string
	// methods every session with it must exercise, as "dir method" (a
	// guard against a script that silently stops doing what it should)
	methods []string
	elicits bool // the session has a form elicitation the host answers with name=Ada
}

func servers() []server {
	return []server{{
		name:   "server-everything",
		script: "everything.json",
		argv:   func(p *peers, _ string) []string { return []string{p.node, p.everything, "stdio"} },
		methods: []string{
			"c2s initialize", "c2s notifications/initialized", "c2s logging/setLevel", "c2s ping", "c2s tools/list",
			"c2s resources/list", "c2s resources/templates/list", "c2s resources/read", "c2s resources/subscribe",
			"c2s resources/unsubscribe", "c2s prompts/list", "c2s prompts/get", "c2s completion/complete", "c2s tools/call",
			"s2c roots/list", "s2c sampling/createMessage", "s2c elicitation/create", "s2c notifications/message",
			"s2c notifications/progress", "s2c notifications/tools/list_changed",
		},
		elicits: true,
	}, {
		name:   "server-filesystem",
		script: "filesystem.json",
		// the root is also given on the command line, so that the allowed
		// directories never depend on when the roots answer is processed
		argv: func(p *peers, root string) []string { return []string{p.node, p.filesystem, root} },
		methods: []string{
			"c2s initialize", "c2s notifications/initialized", "c2s tools/list", "c2s tools/call", "c2s resources/list",
			"c2s prompts/list", "c2s ping", "c2s notifications/roots/list_changed", "s2c roots/list",
		},
	}}
}

// resetRoot (re)creates the directory the host offers as its root: the same
// path and the same contents before every run.
func resetRoot(t *testing.T, root string) {
	t.Helper()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the root\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTypeScriptHost drives server-everything and server-filesystem with the
// TypeScript SDK host (testdata/peers/mcphost.mjs: sampling, elicitation and
// roots answered), directly and through the real `witness proxy`:
//   - the host receives the same bytes through the proxy as directly (after
//     normalising only what the server itself varies between runs: the
//     volatile table) and sends the same bytes;
//   - the cassette's s2c stream is exactly the bytes the host received, its
//     c2s stream exactly the bytes it sent;
//   - the event log verifies and has one event of the right kind per wire
//     line, answers linked to their requests (checkEvents);
//   - `witness serve` on the cassette, as the same host's server command,
//     gives the host exactly the bytes it received through the proxy, and
//     the host sends the recorded bytes back; with a different elicitation
//     answer (Mallory for Ada) serve misses: a JSON-RPC error to the tool
//     call, the answer on stderr, a non-zero exit.
func TestTypeScriptHost(t *testing.T) {
	t.Parallel()
	p := needPeers(t)
	wit := witness(t, p.root)
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			argv := s.argv(p, root)
			run := hostRun{script: script(t, s.script, root), roots: []string{root}, elicit: []string{"name=Ada"}, server: argv}

			resetRoot(t, root)
			direct := p.runHost(t, run)
			resetRoot(t, root)
			rec := filepath.Join(t.TempDir(), "rec")
			run.server = proxied(wit, rec, argv)
			via := p.runHost(t, run)

			if direct.status != "exit 0" || via.status != "exit 0" {
				t.Errorf("server ended: directly %q, through the proxy %q\n%s", direct.status, via.status, tail(via.stderr))
			}
			if a, b := normalise(s.name, direct.received), normalise(s.name, via.received); !bytes.Equal(a, b) {
				t.Errorf("the host received different bytes through the proxy %s", firstDiff(a, b))
			}
			if !bytes.Equal(direct.sent, via.sent) {
				t.Errorf("the host sent different bytes through the proxy %s", firstDiff(direct.sent, via.sent))
			}
			cas := filepath.Join(rec, cassetteName)
			c2s, s2c, lines := readCassette(t, cas)
			if !bytes.Equal(s2c, via.received) {
				t.Errorf("cassette s2c != the bytes the host received %s", firstDiff(s2c, via.received))
			}
			if !bytes.Equal(c2s, via.sent) {
				t.Errorf("cassette c2s != the bytes the host sent %s", firstDiff(c2s, via.sent))
			}
			checkCoverage(t, lines, s.methods)
			t.Logf("%d wire lines, %d bytes received, %d sent", len(lines), len(via.received), len(via.sent))

			t.Run("events", func(t *testing.T) {
				counts := checkEvents(t, lines, readEvents(t, filepath.Join(rec, "events.jsonl")))
				t.Logf("events checked per kind: %v", counts)
			})
			t.Run("serve", func(t *testing.T) {
				resetRoot(t, root)
				run.server = served(wit, cas)
				replay := p.runHost(t, run)
				if replay.status != "exit 0" {
					t.Errorf("serve ended %q\n%s", replay.status, tail(replay.stderr))
				}
				if !bytes.Equal(replay.received, via.received) {
					t.Errorf("serve gave the host different bytes than the recorded session %s", firstDiff(via.received, replay.received))
				}
				// serve waits for the host's answers to recorded server
				// requests, so the host answers at the recorded points
				if !bytes.Equal(replay.sent, via.sent) {
					t.Errorf("the host sent serve different bytes than the recorded session %s", firstDiff(via.sent, replay.sent))
				}
			})
			if !s.elicits {
				return
			}
			// the issue's own example: the user answers Mallory where the
			// recording has Ada
			t.Run("serve-changed-answer", func(t *testing.T) {
				resetRoot(t, root)
				changed := run
				changed.elicit, changed.server, changed.mayFail = []string{"name=Mallory"}, served(wit, cas), true
				r := p.runHost(t, changed)
				resp := answerToTool(r.sent, r.received, "trigger-elicitation-request")
				t.Logf("serve ended %q; the host (exit %d) got %s", r.status, r.code, respRaw(resp))
				if r.status == "exit 0" {
					t.Errorf("serve ended %q after a different elicitation answer", r.status)
				}
				if resp == nil || resp.Error == nil {
					t.Errorf("the tool call that sent the elicitation got %v, want a JSON-RPC error", resp)
				}
				if !strings.Contains(r.stderr, "Mallory") {
					t.Errorf("serve's stderr does not show the different answer:\n%s", tail(r.stderr))
				}
			})
		})
	}
}

// answerToTool returns the answer the host received to its tools/call of
// the named tool (nil when there is none).
func answerToTool(sent, received []byte, tool string) *mcp.Message {
	id := ""
	for _, l := range bytes.Split(sent, []byte("\n")) {
		m, err := mcp.Parse(l)
		if err != nil || m.Kind != mcp.KindRequest || m.Method != "tools/call" {
			continue
		}
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Name == tool {
			id = string(m.ID)
		}
	}
	for _, l := range bytes.Split(received, []byte("\n")) {
		if m, err := mcp.Parse(l); err == nil && id != "" && m.Kind == mcp.KindResponse && string(m.ID) == id {
			return m
		}
	}
	return nil
}

func respRaw(m *mcp.Message) string {
	if m == nil {
		return "no answer"
	}
	return string(m.Raw)
}

// checkCoverage fails unless the session carried every listed method.
func checkCoverage(t *testing.T, lines []wireLine, want []string) {
	t.Helper()
	var seen []string
	for _, l := range lines {
		if m, err := mcp.Parse(l.line); err == nil && m.Method != "" {
			seen = append(seen, string(l.dir)+" "+m.Method)
		}
	}
	var missing []string
	for _, w := range want {
		if !slices.Contains(seen, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the session never carried %s", strings.Join(missing, ", "))
	}
}

// TestRecordingsDeterministic records the same server-filesystem session
// ten times through the proxy with ATW_WITNESS_TS frozen: the event logs are
// byte-identical, and so are the cassettes' wire streams. server-filesystem
// and not server-everything: the latter stamps its dynamic resources with the
// wall clock (see volatile), which reaches the payloads. The cassette files
// as a whole are not compared: they also hold the server's stderr, whose
// interleaving with stdout is up to the scheduler.
func TestRecordingsDeterministic(t *testing.T) {
	t.Parallel()
	p := needPeers(t)
	wit := witness(t, p.root)
	s := servers()[1]
	root := filepath.Join(t.TempDir(), "root")
	argv := s.argv(p, root)
	run := hostRun{script: script(t, s.script, root), roots: []string{root}, server: argv}
	var first, firstC2S, firstS2C []byte
	for i := 0; i < 10; i++ {
		resetRoot(t, root)
		rec := filepath.Join(t.TempDir(), "rec")
		run.server = proxied(wit, rec, argv)
		r := p.runHost(t, run)
		if r.status != "exit 0" {
			t.Fatalf("run %d: the proxy ended %q\n%s", i, r.status, tail(r.stderr))
		}
		ev, err := os.ReadFile(filepath.Join(rec, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		c2s, s2c, _ := readCassette(t, filepath.Join(rec, cassetteName))
		if i == 0 {
			first, firstC2S, firstS2C = ev, c2s, s2c
			readEvents(t, filepath.Join(rec, "events.jsonl")) // it verifies
			t.Logf("event log: %d bytes, %d lines", len(ev), bytes.Count(ev, []byte("\n")))
			continue
		}
		if !bytes.Equal(ev, first) {
			t.Fatalf("run %d: event log differs from run 0 %s", i, firstDiff(first, ev))
		}
		if !bytes.Equal(c2s, firstC2S) || !bytes.Equal(s2c, firstS2C) {
			t.Fatalf("run %d: the cassette's wire differs from run 0", i)
		}
	}
}

// cassetteName is the proxy's cassette file in its --out directory.
const cassetteName = "cassette.jsonl"
