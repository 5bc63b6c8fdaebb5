package httpproxy

import (
	"sync"

	"github.com/agent-trace-witness/witness/mcp"
)

// DefaultMemoryBudget is the proxy's memory budget when Options gives
// none: the bytes that all exchanges and MCP sessions together may hold at
// once beyond their fixed buffers (docs/design/http-proxy.md, "One memory
// budget").
const DefaultMemoryBudget = 64 << 20

// DefaultMaxMCPSessions is the number of MCP sessions a proxy reads into
// mcp/N/ when Options gives none; the exchanges of later sessions are in
// the HTTP cassette only, and the proxy's log says so.
const DefaultMaxMCPSessions = 256

// budget is the proxy's one memory budget: every holder of bytes whose
// number a peer decides (the server messages an MCP session queues, the
// bodies and events held to be read into MCP messages or derived into
// events, the lines held for redaction) takes them from it before it
// holds them, and gives them back once it let them go. A holder that is
// refused does not wait: it stops holding, in the way its own size bound
// already does, and the evidence says so. It belongs to one Run: no
// global state.
//
// The server messages MCP sessions queue can be let go without losing
// any (written at once, in the wire's order): a reader the budget refuses
// first has them written (reclaim), and takes again, so that queues never
// cost a message its reading.
type budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	peak    int64
	refused int64 // refusals so far
	// reclaim writes the queued server messages of every MCP session,
	// giving their bytes back; set once, before the proxy serves
	reclaim func()
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		limit = DefaultMemoryBudget
	}
	return &budget{limit: limit}
}

// take reserves n bytes, or reports false (and reserves nothing) when
// they would take the budget past its limit. A nil budget (parts tested
// without a proxy) has no limit.
func (b *budget) take(n int) bool {
	if n <= 0 || b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+int64(n) > b.limit {
		b.refused++
		return false
	}
	b.used += int64(n)
	b.peak = max(b.peak, b.used)
	return true
}

// takeReclaiming is take for a reader: when refused, it has the queued
// answers written and tries once more.
func (b *budget) takeReclaiming(n int) bool {
	if b.take(n) {
		return true
	}
	if b == nil || b.reclaim == nil {
		return false
	}
	b.reclaim()
	return b.take(n)
}

// give returns n bytes taken before.
func (b *budget) give(n int) {
	if n <= 0 || b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= int64(n)
	if b.used < 0 { // a holder gave back more than it took: a bug, not a crash
		b.used = 0
	}
}

// stats returns the bytes held now, the most held at once, and the
// refusals so far.
func (b *budget) stats() (used, peak, refused int64) {
	if b == nil {
		return 0, 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak, b.refused
}

// size is the budget's limit, for notes ("64 MiB").
func (b *budget) size() string {
	if b == nil {
		return "no limit"
	}
	return mcp.FormatSize(int(b.limit))
}

// lease is what one holder took from the budget; with a nil budget it
// holds without limit (parts tested without a proxy). It is not safe for
// concurrent use: each holder has its own.
type lease struct {
	b *budget
	n int
}

// grow takes n more bytes for the holder (a reader: queued answers are
// written first when the budget is spent).
func (l *lease) grow(n int) bool {
	if !l.b.takeReclaiming(n) {
		return false
	}
	l.n += n
	return true
}

// setTo makes the lease n bytes: it gives back what is over, or takes
// what is missing (false, and the lease unchanged, when refused).
func (l *lease) setTo(n int) bool {
	switch {
	case n < l.n:
		l.b.give(l.n - n)
		l.n = n
	case n > l.n:
		return l.grow(n - l.n)
	}
	return true
}

// release gives everything back.
func (l *lease) release() { l.setTo(0) }
