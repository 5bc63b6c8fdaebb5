package proxy

import (
	"bufio"
	"context"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fullAfter writes to w for the first n writes, then to /dev/full (every
// write fails with ENOSPC), as a disk that fills up mid-session.
type fullAfter struct {
	mu   sync.Mutex
	w    io.Writer
	n    int
	full *os.File
}

func (f *fullAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		f.n--
		return f.w.Write(p)
	}
	return f.full.Write(p)
}

func devFull(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// failClosed runs the echo server behind a Recording whose cassette or
// event log fills up after a few writes; the host sends initialize, a tool
// call, then pings, reading each answer, until the proxy closes its stdout;
// then it closes stdin.
func failClosed(t *testing.T, cassetteFull, eventsFull bool) (host string, out *Outcome, evPath string, closeErr error) {
	t.Helper()
	dir := t.TempDir()
	casF, _ := os.Create(filepath.Join(dir, derive.CassetteFile))
	evPath = filepath.Join(dir, derive.EventsFile)
	evF, _ := os.Create(evPath)
	defer casF.Close()
	defer evF.Close()
	var cas, ev io.Writer = casF, evF
	if cassetteFull {
		// header, spawn, the initialize line; the answer no longer fits
		cas = &fullAfter{w: casF, n: 3, full: devFull(t)}
	}
	if eventsFull {
		ev = &fullAfter{w: evF, n: 0, full: devFull(t)}
	}
	rec, err := NewRecording(RecordingOptions{Cassette: cas, Events: ev, Command: "echo", Started: frozenTS, Frozen: true})
	if err != nil {
		t.Fatal(err)
	}
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	fw := &Forwarder{Command: []string{echo(t)}, Stdin: hostW, Stdout: hostR, Sink: rec, KillGrace: time.Second, DrainWait: 500 * time.Millisecond}
	pid := make(chan int, 1)
	fw.Started = func(p int) { pid <- p }
	done := make(chan struct{})
	go func() {
		out, err = fw.Run(context.Background())
		close(done)
	}()
	// once the proxy has stopped, a host write fails as on a real pipe
	// whose reader exited (io.Pipe would block it forever)
	go func() {
		<-done
		hostW.Close()
	}()
	server := <-pid
	br := bufio.NewReader(proxyOut)
	var got strings.Builder
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	}
	for i := 0; i < 50; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 10+i))
	}
	for _, l := range lines {
		time.Sleep(5 * time.Millisecond)
		if _, werr := io.WriteString(proxyIn, l+"\n"); werr != nil {
			break
		}
		line, rerr := br.ReadString('\n')
		got.WriteString(line)
		if rerr != nil {
			break // the proxy closed the host's stdout
		}
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not stop after the recording failed")
	}
	proxyIn.Close()
	hostW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if groupAlive(server) {
		t.Errorf("the server survived the failure")
	}
	closeErr = rec.Close(out.Failure)
	return got.String(), out, evPath, closeErr
}

// TestFailClosedCassette: the cassette's disk fills up: the server's
// answer that could not be recorded never reaches the host, the host's
// stdout is closed, the server is ended, and the event log's end records
// the failure.
func TestFailClosedCassette(t *testing.T) {
	host, out, evPath, closeErr := failClosed(t, true, false)
	if host != "" {
		t.Errorf("the host got unrecorded bytes: %q", host)
	}
	if out.RecordErr == nil || !strings.Contains(out.Failure, "no space left on device") {
		t.Fatalf("outcome %+v", out)
	}
	if closeErr != nil {
		t.Fatalf("close: %v", closeErr)
	}
	evs := readEvents(t, evPath)
	end := evs[len(evs)-1]
	if end.Kind != eventlog.KindSessionEnd || !strings.Contains(end.End.Failure, "recording failed") || !strings.Contains(end.End.Failure, "no space left on device") {
		t.Errorf("end %+v", end.End)
	}
}

// TestFailClosedEvents: the event log's disk fills up: the session stops
// the same way (the log cannot be ended: the error says so).
func TestFailClosedEvents(t *testing.T) {
	host, out, _, closeErr := failClosed(t, false, true)
	if out.RecordErr == nil || !strings.Contains(out.Failure, "no space left on device") {
		t.Fatalf("outcome %+v", out)
	}
	if n := strings.Count(host, "\n"); n >= 52 {
		t.Errorf("forwarding went on after the failure: %d answers", n)
	}
	if closeErr == nil {
		t.Errorf("closing a log whose disk is full succeeded")
	}
}

// TestEndFailureFromTheWire: what the records show ends up in
// end.failure: a call the server never answered (it died mid-call) and a
// line over the maximum line size.
func TestEndFailureFromTheWire(t *testing.T) {
	t.Run("call without a response", func(t *testing.T) {
		_, res, err := runRecorded(t, Options{Command: []string{echo(t)}}, func(h *host) {
			h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
			h.recv()
			h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}`)
		})
		if err != nil {
			t.Fatal(err)
		}
		evs := readEvents(t, res.Events)
		if f := evs[len(evs)-1].End.Failure; !strings.Contains(f, "1 tool call(s) without a response") {
			t.Errorf("end failure %q", f)
		}
	})
	t.Run("line over the limit", func(t *testing.T) {
		size := 17 << 20
		_, res, err := runRecorded(t, Options{Command: []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo", size)}}, func(h *host) {
			b, _ := io.ReadAll(h.r)
			h.got.Write(b)
		})
		if err != nil {
			t.Fatal(err)
		}
		evs := readEvents(t, res.Events)
		if f := evs[len(evs)-1].End.Failure; !strings.Contains(f, "1 line(s) over the maximum line size") {
			t.Errorf("end failure %q", f)
		}
		_, s2c, recs := readCassette(t, res.Cassette)
		if len(s2c) != size+1 {
			t.Errorf("cassette s2c holds %d bytes", len(s2c))
		}
		last := recs[len(recs)-1]
		for _, r := range recs {
			if r.Dir == S2C && !r.Cont {
				last = r
			}
		}
		if last.LineBytes != int64(size) || len(last.LineSHA256) != 64 {
			t.Errorf("the line's last record has line_bytes %d, line_sha256 %q", last.LineBytes, last.LineSHA256)
		}
	})
}
