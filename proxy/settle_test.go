package proxy

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
)

// settleSink counts what was recorded since the last Settle, and the most
// that ever waited for one.
type settleSink struct {
	mu                 sync.Mutex
	lines, bytes       int // since the last Settle
	settled            int // lines a Settle has seen
	maxLines, maxBytes int
	minLine            int
}

func (s *settleSink) Line(l WireLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Dir != Stderr {
		s.lines++
		s.bytes += len(l.Data)
		if s.minLine == 0 || len(l.Data) < s.minLine {
			s.minLine = len(l.Data)
		}
	}
	return nil
}

func (s *settleSink) Life(cassette.Record) error { return nil }

func (s *settleSink) Settle() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxLines = max(s.maxLines, s.lines)
	s.maxBytes = max(s.maxBytes, s.bytes)
	s.settled += s.lines
	s.lines, s.bytes = 0, 0
	return nil
}

func (s *settleSink) seen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settled
}

// TestSettleFollowsWithoutTraffic: the events of a round trip are derived
// (Settle sees both lines) while the session stays open and nothing more
// is sent: Settle does not wait for the next read.
func TestSettleFollowsWithoutTraffic(t *testing.T) {
	sink := &settleSink{}
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	fw := &Forwarder{Command: []string{echo(t)}, Stdin: hostW, Stdout: hostR, Sink: sink, StdinGrace: time.Second, KillGrace: time.Second}
	done := make(chan error, 1)
	go func() {
		_, err := fw.Run(context.Background())
		done <- err
	}()
	br := bufio.NewReader(proxyOut)
	if _, err := io.WriteString(proxyIn, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// a generous deadline: this checks that it happens, not how fast
	deadline := time.Now().Add(20 * time.Second)
	for sink.seen() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := sink.seen(); n < 2 {
		t.Errorf("Settle saw %d lines of an open session's round trip", n)
	}
	proxyIn.Close()
	io.Copy(io.Discard, br)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hostW.Close()
}

// TestSettleBacklogBounded: a server that writes 100000 notifications as
// fast as it can never gets more than MaxBacklogLines lines or
// MaxBacklogBytes bytes (plus what one read completes) ahead of Settle:
// what a Sink queues stays bounded however fast the wire is.
func TestSettleBacklogBounded(t *testing.T) {
	sink := &settleSink{}
	fw := &Forwarder{Command: []string{hostile(t, "firehose"), strconv.Itoa(100000)}, Stdout: io.Discard, Sink: sink, StdinGrace: time.Second, KillGrace: time.Second}
	if _, err := fw.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	const read = 64 << 10 // one read of the stream
	if sink.settled < 100000 {
		t.Fatalf("Settle saw %d lines", sink.settled)
	}
	if limit := MaxBacklogBytes + read; sink.maxBytes > limit {
		t.Errorf("%d bytes waited for Settle (bound %d)", sink.maxBytes, limit)
	}
	if limit := MaxBacklogLines + read/sink.minLine + 1; sink.maxLines > limit {
		t.Errorf("%d lines waited for Settle (bound %d)", sink.maxLines, limit)
	}
}
