package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/proctree"
	"github.com/agent-trace-witness/witness/mcp"
)

// Sink records what the proxy forwards. The Forwarder calls Line and Life
// one at a time, in the order of the wire across the three streams, and
// forwards the bytes of a line only after Line returned nil: the proxy
// never forwards a byte that is not recorded, and a slow Sink slows the
// wire down. The first error of any method stops forwarding, ends the
// server and is reported (fail closed).
//
// Settle is where the Sink does work that need not delay the wire, such
// as deriving events. The Forwarder calls it one call at a time, possibly
// concurrently with Line, and off the forwarding path where it can: at the
// latest SettleDelay after a line was recorded; at once after a lifecycle
// record and at the end of a stream; and on a stream that recorded more
// than MaxBacklogLines lines or MaxBacklogBytes bytes since the last
// Settle, before it reads on (so that what a Sink queues stays bounded).
//
// The Data of a complete or partial line is valid only during Line: a Sink
// copies what it keeps. The Data of a piece of an over-long line (Cont) and
// of a stderr chunk stays valid until the Settle that the stream calls
// before it reads on has returned.
type Sink interface {
	Line(l WireLine) error
	Life(rec cassette.Record) error
	Settle() error
}

// Forwarder runs one server behind the proxy. It is the forwarding core of
// `witness proxy`, usable without any recording.
type Forwarder struct {
	Command []string  // server command and arguments (no shell)
	Env     []string  // server environment; nil inherits the proxy's
	Dir     string    // working directory of the server; "" is the proxy's
	Stdin   io.Reader // the host's side: what the host writes
	Stdout  io.Writer // the host's side: what the host reads; closed at server stdout EOF (or when recording fails) if it is an io.Closer
	Stderr  io.Writer // the server's stderr is copied here, and the proxy's own messages

	Signals <-chan os.Signal // signals to forward to the server's process group
	// StdinGrace: after the host closed stdin (and the proxy the server's),
	// the server gets this long to exit before SIGTERM (default 5s).
	StdinGrace time.Duration
	KillGrace  time.Duration // after a SIGTERM (forwarded, grace, ctx cancel or failure), SIGKILL after this (default 5s)
	DrainWait  time.Duration // after the server exits, wait this long for its pipes to reach EOF (default 2s)
	Sink       Sink          // may be nil
	MaxLine    int           // longer lines reach the Sink in pieces (default 16 MiB)

	// Started, when set, is called with the server's pid once it runs.
	Started func(pid int)

	// SoleChild says that the calling process starts no other child while
	// Run runs (true of the witness proxy binary, not of a library user
	// in general). The server then starts in a process group of its own
	// inside the proxy's session rather than in a session of its own,
	// which keeps it in the proxy's scheduling group (faster wake-ups; see
	// docs/design/proxy.md, "Latency"), and the end of the run ends every
	// descendant of the process, wherever it moved (package proctree,
	// StartGroup and EndAll). Linux finds them through /proc and the child
	// subreaper; elsewhere the sweep is the server's process group.
	SoleChild bool
}

// Outcome is what happened to the server and to the recording.
type Outcome struct {
	ExitStatus int    // the server's exit code, or 128+N when signal N ended it
	Signal     string // the signal that ended the server, if any
	Forwarded  []string
	Killed     bool  // the proxy SIGKILLed the server or what it left (grace expired or leftovers)
	RecordErr  error // the first recording error: forwarding stopped there and the server was ended
	Leftovers  bool  // processes the server started outlived it and were killed
	// Failure says why the recording is incomplete ("" when it is not):
	// the recording error, or output that did not reach end of file.
	Failure string
}

// Run starts the server, forwards until the server has exited and its
// output is drained, and returns the outcome. An error means the server
// could not be started.
//
// The steps, each checkable on its own: the server starts in a session of
// its own, on pipes only the proxy and the server hold (startServer); each
// stream records a line before it forwards it (startPumps, pumpLines,
// pumpChunks); until the server exits, the proxy ends it in steps and stops
// forwarding at the first recording error (supervise); then it drains the
// server's output and ends whatever the server left behind (endTree); the
// exit is recorded last (finish).
func (f *Forwarder) Run(ctx context.Context) (*Outcome, error) {
	if len(f.Command) == 0 {
		return nil, errors.New("no server command")
	}
	if err := proctree.Supported(); err != nil {
		return nil, err
	}
	s := f.newForwarding()
	if err := s.startServer(); err != nil {
		return nil, err
	}
	defer s.unregister()
	stdin, closeStdin := pollable(f.Stdin)
	defer closeStdin()
	s.stdin = stdin
	if f.Started != nil {
		f.Started(s.pid)
	}
	_ = s.rec.life(cassette.Record{Life: cassette.LifeSpawn})
	s.startPumps()
	s.supervise(ctx)
	s.endTree()
	return s.finish(), nil
}

// forwarding is one run of a server behind the proxy.
type forwarding struct {
	f                                *Forwarder
	stdinGrace, killGrace, drainWait time.Duration
	maxLine                          int
	stderr                           *lockedWriter // the server's stderr and the proxy's messages

	cmd        *exec.Cmd
	pid        int
	unregister func()
	inW        *os.File  // the server's stdin, written by the proxy
	outR, errR *os.File  // the server's stdout and stderr, read by the proxy
	stdin      io.Reader // the host's side, read by the proxy (see pollable)

	rec *recorder
	out *Outcome

	closeServerIn, closeHost sync.Once
	hostEOF                  chan struct{}  // closed when the host's stdin reached EOF
	exited                   chan struct{}  // closed when the server was reaped
	pumps                    sync.WaitGroup // the server's stdout and stderr pumps

	termTimer, killTimer <-chan time.Time // supervise's pending SIGTERM and SIGKILL
}

// newForwarding applies the Forwarder's defaults.
func (f *Forwarder) newForwarding() *forwarding {
	s := &forwarding{f: f,
		stdinGrace: orDefault(f.StdinGrace, 5*time.Second),
		killGrace:  orDefault(f.KillGrace, 5*time.Second),
		drainWait:  orDefault(f.DrainWait, 2*time.Second),
		maxLine:    f.MaxLine,
		stderr:     &lockedWriter{w: f.Stderr},
		rec:        newRecorder(f.Sink),
		out:        &Outcome{},
		hostEOF:    make(chan struct{}),
		exited:     make(chan struct{}),
	}
	if s.maxLine <= 0 {
		s.maxLine = mcp.DefaultMaxLine
	}
	if f.Stderr == nil {
		s.stderr.w = io.Discard
	}
	return s
}

// startServer starts the server on three fresh pipes, as the leader of a
// session of its own (see startInSession), with the proxy as its
// subreaper. The proxy's ends wait in the Go runtime's poller, not in a
// blocking read(2) (docs/design/proxy.md, "Latency"); the server's are
// ordinary blocking ends. Once it runs, the proxy closes the server's
// ends, so that the server's exit (and that of what it started) is seen as
// EOF. On error no pipe is left open.
func (s *forwarding) startServer() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("server stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return fmt.Errorf("server stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return fmt.Errorf("server stderr pipe: %w", err)
	}
	cmd := exec.Command(s.f.Command[0], s.f.Command[1:]...)
	cmd.Env = s.f.Env
	cmd.Dir = s.f.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	proctree.Subreaper()
	var unregister func()
	if s.f.SoleChild {
		cmd.SysProcAttr = deathSignal()
		err = proctree.StartGroup(cmd)
		unregister = func() {}
	} else {
		unregister, err = startInSession(cmd)
	}
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return fmt.Errorf("start server %s: %w", s.f.Command[0], err)
	}
	closeAll(inR, outW, errW) // the child holds its ends now
	s.cmd, s.pid, s.unregister = cmd, cmd.Process.Pid, unregister
	s.inW, s.outR, s.errR = inW, outR, errR
	return nil
}

// closeServerStdin closes the server's stdin (once).
func (s *forwarding) closeServerStdin() { s.closeServerIn.Do(func() { s.inW.Close() }) }

// closeHostStdout closes the host's stdout, if it can be closed (once).
func (s *forwarding) closeHostStdout() {
	s.closeHost.Do(func() {
		if c, ok := s.f.Stdout.(io.Closer); ok {
			c.Close()
		}
	})
}

// startPumps starts the three streams and the wait for the server. The
// host's EOF closes the server's stdin; the server's stdout EOF closes the
// host's stdout. The host -> server pump is not waited for: it may be
// blocked reading the host's stdin after the server is gone; it ends when
// the host closes it, or when Run returns if pollable could reopen it.
func (s *forwarding) startPumps() {
	go func() {
		if s.stdin != nil {
			pumpLines(s.inW, s.stdin, C2S, s.rec, s.maxLine)
		}
		_ = s.rec.eof(C2S)
		_ = s.rec.life(cassette.Record{Life: cassette.LifeStdinClosed})
		s.closeServerStdin() // EOF from the host: close the server's stdin
		close(s.hostEOF)
	}()
	s.pumps.Add(2)
	go func() {
		defer s.pumps.Done()
		pumpLines(s.f.Stdout, s.outR, S2C, s.rec, s.maxLine)
		_ = s.rec.eof(S2C)
		s.closeHostStdout() // EOF from the server: close the host's stdout
	}()
	go func() {
		defer s.pumps.Done()
		pumpChunks(s.stderr, s.errR, s.rec)
		_ = s.rec.eof(Stderr)
	}()
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
}

// supervise returns once the server has exited. Meanwhile it ends the
// server in steps: the stdin grace after the host's EOF, the proxy's
// cancellation and a recording failure lead to SIGTERM, a forwarded signal
// is passed on, and SIGKILL follows either after the kill grace. A
// recording failure also stops forwarding at once (fail closed). Every
// signal is recorded before it is sent.
func (s *forwarding) supervise(ctx context.Context) {
	ctxDone := ctx.Done()
	eofSeen := s.hostEOF
	failed := s.rec.failed
	for {
		select {
		case <-s.exited:
			return
		case <-eofSeen:
			eofSeen = nil
			if s.killTimer == nil {
				s.termTimer = time.After(s.stdinGrace)
			}
		case <-s.termTimer:
			s.sigterm(fmt.Sprintf("the server did not exit within %s of its stdin closing", s.stdinGrace))
		case <-failed:
			failed = nil
			s.failClosed()
		case sig := <-s.f.Signals:
			s.forward(sig)
		case <-ctxDone:
			ctxDone = nil
			s.sigterm("proxy cancelled")
		case <-s.killTimer:
			s.killTimer = nil
			s.out.Killed = true
			_ = s.rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "the server outlived the grace after SIGTERM"})
			_ = s.signal(syscall.SIGKILL)
		}
	}
}

// sigterm records and sends SIGTERM to the server's group and arms the
// SIGKILL after the kill grace, unless a SIGKILL is already pending.
func (s *forwarding) sigterm(detail string) {
	if s.killTimer != nil {
		return
	}
	s.termTimer = nil
	_ = s.rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGTERM", Detail: detail})
	_ = s.signal(syscall.SIGTERM)
	s.killTimer = time.After(s.killGrace)
}

// failClosed stops forwarding after a recording error: nothing more is
// forwarded, the host sees its pipe close, and the server is ended.
func (s *forwarding) failClosed() {
	s.closeHostStdout()
	s.closeServerStdin()
	s.sigterm("recording failed")
}

// forward records a signal the host sent the proxy and passes it to the
// server's group (SIGPIPE is the proxy's own and is not passed on); the
// SIGKILL follows after the kill grace if the server outlives it.
func (s *forwarding) forward(sig os.Signal) {
	sn, ok := sig.(syscall.Signal)
	if !ok || sn == syscall.SIGPIPE {
		return
	}
	s.out.Forwarded = append(s.out.Forwarded, sn.String())
	_ = s.rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: sigName(sn), Detail: "forwarded from the host"})
	_ = s.signal(sn)
	if s.killTimer == nil {
		s.termTimer = nil
		s.killTimer = time.After(s.killGrace)
	}
}

// endTree runs after the server has exited: it drains the server's stdout
// and stderr to EOF, unless something it started keeps them open; then it
// ends whatever the server left behind, in its group or not (setsid,
// double fork), records that it did, and warns if any of it survived
// SIGKILL. Output that does not reach EOF within the drain wait makes the
// recording incomplete: the pipes are then abandoned, not waited for.
func (s *forwarding) endTree() {
	drained := make(chan struct{})
	go func() { s.pumps.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(s.drainWait):
	}
	if s.f.SoleChild {
		s.endAll()
	} else {
		if s.stillAlive(func() bool { return proctree.Alive(s.pid) }) {
			s.out.Leftovers = true
			s.out.Killed = true
			_ = s.rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "processes the server started outlived it"})
		}
		if _, survivors := proctree.End(s.pid, s.drainWait); survivors {
			fmt.Fprintf(s.stderr, "witness: warning: processes started by the server survived SIGKILL\n")
		}
	}
	select {
	case <-drained:
		closeAll(s.outR, s.errR)
	case <-time.After(s.drainWait):
		// something outside the server's tree holds the pipes open: stop
		// waiting, and leave the pipes open so that nothing is recorded
		// after the exit (the pumps end when that holder exits)
		s.rec.incomplete("the server's output did not reach end of file after it exited (a process outside its tree holds the pipe); bytes after that are not recorded")
	}
}

// dyingWait bounds how long endTree lets processes that the proxy's own
// SIGKILL already reached finish dying before it counts them as
// leftovers: a killed process closes its pipes before the kernel shows it
// as a zombie, so right after the drain it can still look alive.
const dyingWait = 250 * time.Millisecond

// stillAlive reports alive(), and when the proxy already sent SIGKILL (so
// every process it reached is dying) asks again until alive() says no or
// dyingWait passes: only what outlives the kill is a leftover.
func (s *forwarding) stillAlive(alive func() bool) bool {
	if !alive() {
		return false
	}
	if !s.out.Killed {
		return true
	}
	deadline := time.Now().Add(min(dyingWait, s.drainWait))
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if !alive() {
			return false
		}
	}
	return true
}

// endAll is endTree's sweep when the proxy is the server's only starter
// (Forwarder.SoleChild): every descendant of the process is the server's,
// whatever process group or session it moved to, and is ended. The
// record says so, and says when one had moved into the proxy's own
// process group (where signals meant for the proxy reach it).
func (s *forwarding) endAll() {
	var joined bool
	if !s.stillAlive(func() bool {
		var alive bool
		alive, joined = proctree.Descendants(s.pid)
		return alive
	}) {
		return
	}
	s.out.Leftovers = true
	s.out.Killed = true
	rec := cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "processes the server started outlived it"}
	if joined {
		rec.Detail += " (one had moved into the proxy's own process group)"
	}
	_ = s.rec.life(rec)
	if proctree.EndAll(s.pid, s.drainWait) {
		fmt.Fprintf(s.stderr, "witness: warning: processes started by the server survived SIGKILL\n")
	}
}

// signal sends sig to the server's process group, and with SoleChild to
// the server itself too (it may have left its group: only a session
// leader cannot).
func (s *forwarding) signal(sig syscall.Signal) error {
	if s.f.SoleChild {
		return proctree.SignalServer(s.pid, sig)
	}
	return proctree.Signal(s.pid, sig)
}

// finish records the server's exit (after the pending EOF records) and
// fills in the outcome: the exit status (128+N for signal N), the signal,
// and the recording's error and failure text. After it, nothing more is
// recorded.
func (s *forwarding) finish() *Outcome {
	ps := s.cmd.ProcessState
	s.out.ExitStatus = exitStatus(ps)
	exitRec := cassette.Record{Life: cassette.LifeExit, Status: ps.String()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s.out.Signal = sigName(ws.Signal())
	} else {
		code := ps.ExitCode()
		exitRec.Code = &code
	}
	_ = s.rec.exit(exitRec)
	s.out.Failure, s.out.RecordErr = s.rec.result()
	return s.out
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// SettleDelay bounds how long a recorded line waits for Sink.Settle (the
// derivation of its events) while the session is active. Deriving events
// right after forwarding, on the forwarding goroutine, cost a round trip
// through the proxy about a fifth of the direct round trip on a loaded
// two-core machine: it ran just when the other side was woken to answer
// and competed with it for the CPU (docs/design/proxy.md, "Latency").
const SettleDelay = 50 * time.Millisecond

// MaxBacklogLines and MaxBacklogBytes bound what a stream records before a
// Settle: past either, the stream settles before it reads on.
const (
	MaxBacklogLines = 256
	MaxBacklogBytes = 1 << 20
)

// recorder serialises the Sink calls of the three streams and the main
// loop, and turns the first error into a stop of the whole session.
type recorder struct {
	mu     sync.Mutex // Line, Life and the eof bookkeeping, in wire order
	smu    sync.Mutex // Settle
	sink   Sink
	err    error // the first error; nothing is recorded or forwarded after it
	failed chan struct{}
	// lines and bytes recorded since the last Settle began, and the timer
	// that settles them within SettleDelay (armed: it is pending)
	backlog, backlogBytes int
	timer                 *time.Timer
	armed                 bool
	// The server's stdout and stderr reach EOF in a racy order; their eof
	// records are written together, stdout first, once both ended (or at
	// exit), so that the same session gives the same cassette.
	serverEOF map[Dir]bool
	// why the recording is incomplete although no write failed
	why string
	// over: the session is over (Run returned); a pump still reading the
	// host's stdin records and forwards nothing more
	over bool
}

// errOver stops a pump that outlived its session.
var errOver = errors.New("the session is over")

func newRecorder(sink Sink) *recorder {
	return &recorder{sink: sink, failed: make(chan struct{}), serverEOF: map[Dir]bool{}}
}

// failLocked records the first error; r.mu is held.
func (r *recorder) failLocked(err error) error {
	if r.err == nil {
		r.err = err
		close(r.failed)
	}
	return r.err
}

// line records l; the bytes may be forwarded only when it returns nil.
func (r *recorder) line(l WireLine) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.over {
		return errOver
	}
	if r.sink == nil {
		return nil
	}
	if err := r.sink.Line(l); err != nil {
		return r.failLocked(err)
	}
	r.backlog++
	r.backlogBytes += len(l.Data)
	return nil
}

// forwarded is called by a stream after it forwarded what it recorded and
// before it reads on. It settles at once when now is set (the stream lent
// the Sink a buffer it is about to reuse, see Sink) or when the backlog is
// over its bounds; otherwise it leaves the Settle to a timer that fires
// within SettleDelay, so that the stream goes back to reading at once and
// the work runs while nothing waits for it. The error stops the stream.
func (r *recorder) forwarded(now bool) error {
	if r.sink == nil {
		return nil
	}
	r.mu.Lock()
	now = now || r.backlog > MaxBacklogLines || r.backlogBytes > MaxBacklogBytes
	if !now && !r.armed && r.backlog > 0 && r.err == nil && !r.over {
		r.armed = true
		if r.timer == nil {
			r.timer = time.AfterFunc(SettleDelay, r.settleLater)
		} else {
			r.timer.Reset(SettleDelay)
		}
	}
	err := r.err
	if r.over {
		err = errOver
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if now {
		return r.settle()
	}
	return nil
}

// settleLater is the timer's Settle.
func (r *recorder) settleLater() {
	r.mu.Lock()
	r.armed = false
	r.mu.Unlock()
	_ = r.settle()
}

func (r *recorder) life(rec cassette.Record) error {
	r.mu.Lock()
	err := r.lifeLocked(rec)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.settle()
}

func (r *recorder) lifeLocked(rec cassette.Record) error {
	if r.err != nil {
		return r.err
	}
	if r.over {
		return errOver
	}
	if r.sink == nil {
		return nil
	}
	if err := r.sink.Life(rec); err != nil {
		return r.failLocked(err)
	}
	return nil
}

// eof records the end of a stream (the server's two together, see
// serverEOF).
func (r *recorder) eof(dir Dir) error {
	r.mu.Lock()
	var err error
	if dir == C2S {
		err = r.lifeLocked(cassette.Record{Life: cassette.LifeEOF, Stream: dir})
	} else {
		r.serverEOF[dir] = true
		if r.serverEOF[S2C] && r.serverEOF[Stderr] {
			err = r.flushServerEOFLocked()
		}
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.settle()
}

func (r *recorder) flushServerEOFLocked() error {
	var err error
	for _, d := range []Dir{S2C, Stderr} {
		if r.serverEOF[d] && err == nil {
			err = r.lifeLocked(cassette.Record{Life: cassette.LifeEOF, Stream: d})
		}
		delete(r.serverEOF, d)
	}
	return err
}

// exit writes the pending eof records and the exit record.
func (r *recorder) exit(rec cassette.Record) error {
	r.mu.Lock()
	err := r.flushServerEOFLocked()
	if err == nil {
		err = r.lifeLocked(rec)
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.settle()
}

// settle lets the sink catch up after a stream forwarded what it recorded.
func (r *recorder) settle() error {
	if r.sink == nil {
		return nil
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	r.mu.Lock()
	err := r.err
	if r.over {
		err = errOver
	}
	r.backlog, r.backlogBytes = 0, 0
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := r.sink.Settle(); err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.failLocked(err)
	}
	return nil
}

// incomplete notes why the recording misses bytes although no write
// failed.
func (r *recorder) incomplete(why string) {
	r.mu.Lock()
	if r.why == "" {
		r.why = why
	}
	r.mu.Unlock()
}

// result ends the session's recording (the Sink is the caller's again) and
// returns the failure text for the log's end and the recording error.
func (r *recorder) result() (failure string, err error) {
	r.smu.Lock()
	defer r.smu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over = true
	if r.timer != nil {
		r.timer.Stop()
	}
	switch {
	case r.err != nil:
		return "recording failed, so forwarding stopped and the server was ended: " + r.err.Error(), r.err
	case r.why != "":
		return r.why, nil
	}
	return "", nil
}

// pumpLines copies a line stream (c2s, s2c) from src to dst: each read is
// split into lines, every complete line is recorded, and only then are the
// recorded bytes forwarded. A line still incomplete at the end of a read
// waits (unforwarded) for its end, up to maxLine bytes; a longer line is
// recorded and forwarded in pieces as it arrives. A failed write (the
// reader went away) stops writing but not reading, so the other side never
// blocks and everything is still recorded. A recording error stops the
// pump: nothing unrecorded is ever forwarded.
func pumpLines(dst io.Writer, src io.Reader, dir Dir, rec *recorder, maxLine int) {
	buf := make([]byte, 64<<10)
	sp := lineSplitter{max: maxLine, dir: dir, rec: rec}
	writeOK := dst != nil
	forward := func(pre, post []byte) {
		for _, b := range [][]byte{pre, post} {
			if len(b) > 0 && writeOK {
				if _, err := dst.Write(b); err != nil {
					writeOK = false
				}
			}
		}
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pre, post, rerr := sp.feed(buf[:n])
			if rerr != nil {
				return
			}
			forward(pre, post)
			if rec.forwarded(sp.lent()) != nil {
				return
			}
		}
		if err != nil {
			pre, rerr := sp.flush()
			if rerr != nil {
				return
			}
			forward(pre, nil)
			_ = rec.settle()
			return
		}
	}
}

// pumpChunks copies the server's stderr (not framed): each chunk is
// recorded as read, then written on.
func pumpChunks(dst io.Writer, src io.Reader, rec *recorder) {
	buf := make([]byte, 64<<10)
	writeOK := dst != nil
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if rec.line(WireLine{Dir: Stderr, Data: buf[:n]}) != nil {
				return
			}
			if writeOK {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					writeOK = false
				}
			}
			// the chunk is the read buffer: settle before reusing it
			if rec.forwarded(true) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sigName is the conventional name of a signal (SIGTERM).
func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return s.String()
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
