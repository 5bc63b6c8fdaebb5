package capture

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// lvPeer returns node and the entry point of an npm peer server, failing
// when CI=true and the peers are missing, skipping otherwise.
func lvPeer(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	entry = filepath.Join(testrepo.Root(t), "testdata", "peers", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(entry)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peer %s missing (%v): run 'make peers'", pkg, err)
		}
		t.Skipf("npm peer %s missing (%v): run 'make peers'", pkg, err)
	}
	return node, entry
}

func lvCountMethod(evs []*eventlog.Event, method string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == eventlog.KindNotification && e.Method == method {
			n++
		}
	}
	return n
}

func TestPeerServerEverything(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-everything")
	calls := []ScenarioCall{
		{Tool: "echo", Arguments: json.RawMessage(`{"message":"hi ✓"}`)},
		{Tool: "get-sum", Arguments: json.RawMessage(`{"a":1.5,"b":2}`)},
		{Tool: "get-structured-content", Arguments: json.RawMessage(`{"location":"New York"}`)},
		{Tool: "no_such_tool", Arguments: json.RawMessage(`{}`)},
		{Tool: "echo", Arguments: json.RawMessage(`{}`)},
	}
	runs := 10
	if testing.Short() {
		runs = 1
	}
	var first *lvCaptured
	for i := 0; i < runs; i++ {
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, "stdio"}, Timeout: 20 * time.Second}, Calls: calls})
		if c.err != nil {
			t.Fatalf("run %d: %v\nwarnings %v", i, c.err, c.warnings)
		}
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.events, c.events) {
			t.Fatalf("run %d: event log differs from run 0\n%s\n---\n%s", i, first.events, c.events)
		}
	}
	c := first
	t.Logf("server-everything: %d tools, %d calls, %d records, %d events, first run %s", c.res.Tools, c.res.Calls, c.res.Records, c.res.EventN, c.dur.Round(time.Millisecond))
	evs := lvReadEvents(t, c.events)
	h := evs[0].Header.Server
	if h.Name != "mcp-servers/everything" || h.ProtocolVersion != "2025-11-25" || len(h.Tools) != c.res.Tools || c.res.Tools < 10 {
		t.Fatalf("header %+v", h)
	}
	if lvCountMethod(evs, "notifications/tools/list_changed") < 1 {
		t.Fatalf("no unprompted notifications/tools/list_changed recorded:\n%s", c.events)
	}
	tc, tr := lvByKind(evs, eventlog.KindToolCall), lvByKind(evs, eventlog.KindToolResponse)
	if len(tc) != 5 || len(tr) != 5 {
		t.Fatalf("calls %d responses %d", len(tc), len(tr))
	}
	for i := range tc {
		if tr[i].Call != tc[i].ID {
			t.Fatalf("response %d links %s, want %s", i, tr[i].Call, tc[i].ID)
		}
	}
	if !bytes.Contains(tr[0].Payload, []byte("Echo: hi ✓")) || !*tr[3].IsError || !*tr[4].IsError || *tr[0].IsError {
		t.Fatalf("results: %s / %s", tr[0].Payload, tr[3].Payload)
	}
	if !bytes.Contains(tr[2].Payload, []byte("structuredContent")) {
		t.Fatalf("structured result not kept: %s", tr[2].Payload)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}

func TestPeerServerFilesystem(t *testing.T) {
	t.Parallel()
	node, entry := lvPeer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(root), "outside.txt")
	args := func(v map[string]string) json.RawMessage { b, _ := json.Marshal(v); return b }
	calls := []ScenarioCall{
		{Tool: "list_directory", Arguments: args(map[string]string{"path": root})},
		{Tool: "read_text_file", Arguments: args(map[string]string{"path": filepath.Join(root, "a.txt")})},
		{Tool: "write_file", Arguments: args(map[string]string{"path": filepath.Join(root, "b.txt"), "content": "written by witness"})},
		{Tool: "read_text_file", Arguments: args(map[string]string{"path": outside})},
	}
	runs := 10
	if testing.Short() {
		runs = 1
	}
	var first *lvCaptured
	for i := 0; i < runs; i++ {
		os.Remove(filepath.Join(root, "b.txt"))
		c := lvRunCapture(t, CaptureOptions{LiveOptions: LiveOptions{Command: node, Args: []string{entry, root}, Timeout: 20 * time.Second}, Calls: calls})
		if c.err != nil {
			t.Fatalf("run %d: %v\nwarnings %v", i, c.err, c.warnings)
		}
		if first == nil {
			first = c
			continue
		}
		if !bytes.Equal(first.events, c.events) {
			t.Fatalf("run %d: event log differs from run 0\n%s\n---\n%s", i, first.events, c.events)
		}
	}
	c := first
	t.Logf("server-filesystem: %d tools, %d calls, %d records, %d events, first run %s", c.res.Tools, c.res.Calls, c.res.Records, c.res.EventN, c.dur.Round(time.Millisecond))
	evs := lvReadEvents(t, c.events)
	if evs[0].Header.Server.Name != "secure-filesystem-server" || c.res.Tools != 14 {
		t.Fatalf("header %+v, %d tools", evs[0].Header.Server, c.res.Tools)
	}
	tr := lvByKind(evs, eventlog.KindToolResponse)
	if len(tr) != 4 || !*tr[3].IsError || *tr[1].IsError || !bytes.Contains(tr[1].Payload, []byte(`hello\n`)) {
		t.Fatalf("responses: %+v", tr)
	}
	if !strings.Contains(string(tr[3].Payload), "Access denied") {
		t.Fatalf("error result: %s", tr[3].Payload)
	}
	eff := lvByKind(evs, eventlog.KindExternalEffect)
	tc := lvByKind(evs, eventlog.KindToolCall)
	if len(eff) != 1 || eff[0].Call != tc[2].ID || eff[0].Effect.Target != filepath.Join(root, "b.txt") {
		t.Fatalf("effects %+v", eff)
	}
	lvCheckChain(t, c.events)
	lvCheckRederive(t, c)
	lvCheckGroupGone(t, c)
}
