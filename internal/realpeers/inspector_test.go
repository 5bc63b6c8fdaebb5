package realpeers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
)

// inspectorResult is one run of the Inspector's CLI mode.
type inspectorResult struct {
	stdout []byte
	stderr string
	code   int
}

// runInspector runs `cli.js --cli SERVER... --method ...` with the pinned
// Node 22 (first on PATH too: cli.js starts its CLI with "node").
func (p *peers) runInspector(t *testing.T, server, method []string) *inspectorResult {
	t.Helper()
	dir := t.TempDir()
	args := append(append([]string{p.inspector, "--cli"}, server...), method...)
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.node22, args...)
	cmd.Dir = dir
	e := env(dir)
	e[0] = "PATH=" + filepath.Dir(p.node22) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = e
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := &inspectorResult{stdout: stdout.Bytes(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("inspector: %v\n%s", err, tail(stderr.String()))
	}
	return r
}

// TestInspectorCLI drives server-everything and server-filesystem with the
// MCP Inspector's CLI mode (one session per --method), directly and through
// the real `witness proxy`: the same stdout and exit status 0 both ways, the
// printed result is the result the cassette holds for that request, and the
// event log has its events (checkEvents). The Inspector splits its own
// argv at the first "--", so the proxy is given the server command without
// one (proxy stops reading flags at its first argument anyway).
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	p := needPeers(t)
	p.needInspector(t)
	wit := witness(t, p.root)
	root := filepath.Join(t.TempDir(), "root")
	resetRoot(t, root)
	everything := []string{p.node22, p.everything, "stdio"}
	filesystem := []string{p.node22, p.filesystem, root}
	for _, c := range []struct {
		name   string
		server []string
		method []string
	}{
		{"everything/resources-read", everything, []string{"--method", "resources/read", "--uri", "demo://resource/static/document/features.md"}},
		{"everything/prompts-get", everything, []string{"--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris"}},
		{"filesystem/tools-call", filesystem, []string{"--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path=" + filepath.Join(root, "hello.txt")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			direct := p.runInspector(t, c.server, c.method)
			rec := filepath.Join(t.TempDir(), "rec")
			via := p.runInspector(t, append([]string{wit, "proxy", "--out", rec}, c.server...), c.method)
			if direct.code != 0 || via.code != 0 {
				t.Errorf("exit: directly %d, through the proxy %d\n%s\n%s", direct.code, via.code, tail(direct.stderr), tail(via.stderr))
			}
			if !bytes.Equal(direct.stdout, via.stdout) {
				t.Errorf("the Inspector printed different bytes through the proxy %s", firstDiff(direct.stdout, via.stdout))
			}
			_, _, lines := readCassette(t, filepath.Join(rec, cassetteName))
			answer := answerTo(t, lines, c.method[1])
			got, err1 := canon.Transform(via.stdout)
			want, err2 := canon.Transform(answer.Result)
			if answer.Error != nil || err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("the Inspector printed %.300s\nthe cassette's answer is %.300s (%v %v)", via.stdout, answer.Raw, err1, err2)
			}
			t.Run("events", func(t *testing.T) {
				counts := checkEvents(t, lines, readEvents(t, filepath.Join(rec, "events.jsonl")))
				t.Logf("events checked per kind: %v", counts)
			})
		})
	}
}

// answerTo returns the server's answer to the host's (only) request with
// that method.
func answerTo(t *testing.T, lines []wireLine, method string) *mcp.Message {
	t.Helper()
	var id string
	for _, l := range lines {
		m, err := mcp.Parse(l.line)
		if err != nil {
			continue
		}
		switch {
		case l.dir == cassette.C2S && m.Kind == mcp.KindRequest && m.Method == method:
			id = string(m.ID)
		case id != "" && l.dir == cassette.S2C && m.Kind == mcp.KindResponse && string(m.ID) == id:
			return m
		}
	}
	var all []string
	for _, l := range lines {
		all = append(all, string(l.dir)+" "+string(l.line))
	}
	t.Fatalf("no answer to %s in the cassette:\n%s", method, tail(strings.Join(all, "\n")))
	return nil
}
