package capture

import (
	"encoding/json"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// lvProjection is an event without what depends on the server command line
// (the header's command and args, hence the session id and chain hashes).
type lvProjection struct {
	Kind    eventlog.Kind
	Tool    string
	Method  string
	RPCID   string
	Call    string
	Payload string
	SHA     string
	IsError *bool
	Effect  *eventlog.Effect
	Wire    *eventlog.WireRef
	Server  *eventlog.ServerInfo
	End     string
}

func lvProject(t *testing.T, data []byte) []lvProjection {
	var out []lvProjection
	for _, e := range lvReadEvents(t, data) {
		p := lvProjection{Kind: e.Kind, Tool: e.Tool, Method: e.Method, RPCID: string(e.RPCID), Call: e.Call,
			Payload: string(e.Payload), SHA: e.PayloadSHA256, IsError: e.IsError, Effect: e.Effect, Wire: e.Wire}
		if e.Header != nil && e.Header.Server != nil {
			s := *e.Header.Server
			s.Command, s.Args = "", nil
			p.Server = &s
		}
		if e.End != nil {
			p.End = e.End.Reason
		}
		out = append(out, p)
	}
	return out
}

// TestCassetteReplaysThroughServe records a session with the live client,
// then runs the same scenario against `witness serve --cassette` on that
// recording: the events are the same but for the server command line.
func TestCassetteReplaysThroughServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the witness binary")
	}
	witness := lvBuildTestServer(t, "cmd/witness")
	type peer struct {
		name string
		cmd  []string
	}
	peers := []peer{{"gosdk", []string{lvBuildTestServer(t, "testdata/servers/gosdk")}}}
	calls := []ScenarioCall{
		{Tool: "greet", Arguments: json.RawMessage(`{"name":"replay"}`)},
		{Tool: "fail", Arguments: json.RawMessage(`{"why":"x"}`)},
		{Tool: "delete_file", Arguments: json.RawMessage(`{"path":"/tmp/r"}`)},
		{Tool: "greet", Arguments: json.RawMessage(`{"name":"replay"}`)},
	}
	if node, entry := lvPeerOptional(t, "server-everything"); node != "" {
		peers = append(peers, peer{"server-everything", []string{node, entry, "stdio"}})
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			cs := calls
			if p.name != "gosdk" {
				cs = []ScenarioCall{
					{Tool: "echo", Arguments: json.RawMessage(`{"message":"replay"}`)},
					{Tool: "get-sum", Arguments: json.RawMessage(`{"a":1,"b":2}`)},
					{Tool: "no_such_tool", Arguments: json.RawMessage(`{}`)},
				}
			}
			dir := t.TempDir()
			live := lvRunCapture(t, CaptureOptions{OutDir: filepath.Join(dir, "live"), LiveOptions: LiveOptions{Command: p.cmd[0], Args: p.cmd[1:], Timeout: 20 * time.Second}, Calls: cs})
			if live.err != nil {
				t.Fatal(live.err)
			}
			served := lvRunCapture(t, CaptureOptions{OutDir: filepath.Join(dir, "served"), LiveOptions: LiveOptions{Command: witness,
				Args: []string{"serve", "--cassette", filepath.Join(dir, "live", derive.CassetteFile)}, Timeout: 10 * time.Second}, Calls: cs})
			if served.err != nil {
				t.Fatalf("served session: %v\nwarnings: %v", served.err, served.warnings)
			}
			a, b := lvProject(t, live.events), lvProject(t, served.events)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("events differ between the live and the served session:\nlive:\n%s\nserved:\n%s", live.events, served.events)
			}
			t.Logf("%s: %d events equal (live %s, served %s)", p.name, len(a), live.dur.Round(time.Millisecond), served.dur.Round(time.Millisecond))
		})
	}
}

// lvPeerOptional returns node and the peer's entry point, or "" when the
// peers are not installed (TestPeer* already fails under CI=true).
func lvPeerOptional(t *testing.T, pkg string) (string, string) {
	entry := filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		return "", ""
	}
	return "node", entry
}
