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
// After forwarding what it recorded, a stream calls Settle (one call at a
// time, possibly concurrently with Line), where the Sink does work that
// need not delay the wire, such as deriving events. The Data of a WireLine
// is valid until the next Settle of the stream that produced it has
// returned; a Sink must not keep it longer.
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
func (f *Forwarder) Run(ctx context.Context) (*Outcome, error) {
	if len(f.Command) == 0 {
		return nil, errors.New("no server command")
	}
	if err := proctree.Supported(); err != nil {
		return nil, err
	}
	stdinGrace := orDefault(f.StdinGrace, 5*time.Second)
	killGrace := orDefault(f.KillGrace, 5*time.Second)
	drainWait := orDefault(f.DrainWait, 2*time.Second)
	maxLine := f.MaxLine
	if maxLine <= 0 {
		maxLine = mcp.DefaultMaxLine
	}
	stderr := &lockedWriter{w: f.Stderr}
	if f.Stderr == nil {
		stderr.w = io.Discard
	}

	inR, inW, err := blockingPipe()
	if err != nil {
		return nil, fmt.Errorf("server stdin pipe: %w", err)
	}
	outR, outW, err := blockingPipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("server stdout pipe: %w", err)
	}
	errR, errW, err := blockingPipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("server stderr pipe: %w", err)
	}
	cmd := exec.Command(f.Command[0], f.Command[1:]...)
	cmd.Env = f.Env
	cmd.Dir = f.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	proctree.Subreaper()
	unregister, err := startInSession(cmd)
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("start server %s: %w", f.Command[0], err)
	}
	closeAll(inR, outW, errW) // the child holds its ends now
	pid := cmd.Process.Pid
	defer unregister()
	if f.Started != nil {
		f.Started(pid)
	}

	out := &Outcome{}
	rec := newRecorder(f.Sink)
	_ = rec.life(cassette.Record{Life: cassette.LifeSpawn})

	var closeServerIn, closeHost sync.Once
	serverIn := func() { closeServerIn.Do(func() { inW.Close() }) }
	host := func() {
		closeHost.Do(func() {
			if c, ok := f.Stdout.(io.Closer); ok {
				c.Close()
			}
		})
	}

	// host -> server. Not waited for: it may be blocked reading the host's
	// stdin after the server is gone; it ends when the host closes it.
	hostEOF := make(chan struct{})
	go func() {
		if f.Stdin != nil {
			pumpLines(inW, f.Stdin, C2S, rec, maxLine)
		}
		_ = rec.eof(C2S)
		_ = rec.life(cassette.Record{Life: cassette.LifeStdinClosed})
		serverIn() // EOF from the host: close the server's stdin
		close(hostEOF)
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		pumpLines(f.Stdout, outR, S2C, rec, maxLine)
		_ = rec.eof(S2C)
		host() // EOF from the server: close the host's stdout
	}()
	go func() {
		defer wg.Done()
		pumpChunks(stderr, errR, rec)
		_ = rec.eof(Stderr)
	}()

	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	var termTimer, killTimer <-chan time.Time
	sigterm := func(detail string) {
		if killTimer != nil {
			return
		}
		termTimer = nil
		_ = rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGTERM", Detail: detail})
		_ = proctree.Signal(pid, syscall.SIGTERM)
		killTimer = time.After(killGrace)
	}
	ctxDone := ctx.Done()
	eofSeen := hostEOF
	failed := rec.failed
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-eofSeen:
			eofSeen = nil
			if killTimer == nil {
				termTimer = time.After(stdinGrace)
			}
		case <-termTimer:
			sigterm(fmt.Sprintf("the server did not exit within %s of its stdin closing", stdinGrace))
		case <-failed:
			// fail closed: nothing more is forwarded; the host sees its
			// pipe close and the server is ended
			failed = nil
			host()
			serverIn()
			sigterm("recording failed")
		case sig := <-f.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok || s == syscall.SIGPIPE {
				continue
			}
			out.Forwarded = append(out.Forwarded, s.String())
			_ = rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: sigName(s), Detail: "forwarded from the host"})
			_ = proctree.Signal(pid, s)
			if killTimer == nil {
				termTimer = nil
				killTimer = time.After(killGrace)
			}
		case <-ctxDone:
			ctxDone = nil
			sigterm("proxy cancelled")
		case <-killTimer:
			killTimer = nil
			out.Killed = true
			_ = rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "the server outlived the grace after SIGTERM"})
			_ = proctree.Signal(pid, syscall.SIGKILL)
		}
	}

	// The server has exited: drain its stdout and stderr to EOF, unless
	// something it started keeps them open; then end whatever it left
	// behind, in its group or not (setsid, double fork).
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainWait):
	}
	if proctree.Alive(pid) {
		out.Leftovers = true
		out.Killed = true
		_ = rec.life(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "processes the server started outlived it"})
	}
	if _, survivors := proctree.End(pid, drainWait); survivors {
		fmt.Fprintf(stderr, "witness: warning: processes started by the server survived SIGKILL\n")
	}
	select {
	case <-drained:
		closeAll(outR, errR)
	case <-time.After(drainWait):
		// something outside the server's tree holds the pipes open: stop
		// waiting (a blocked read on a blocking pipe outlives close; the
		// goroutine ends when that holder exits)
		rec.incomplete("the server's output did not reach end of file after it exited (a process outside its tree holds the pipe); bytes after that are not recorded")
	}

	out.ExitStatus = exitStatus(cmd.ProcessState)
	exitRec := cassette.Record{Life: cassette.LifeExit, Status: cmd.ProcessState.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = sigName(ws.Signal())
	} else {
		code := cmd.ProcessState.ExitCode()
		exitRec.Code = &code
	}
	_ = rec.exit(exitRec)
	out.Failure, out.RecordErr = rec.result()
	return out, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// recorder serialises the Sink calls of the three streams and the main
// loop, and turns the first error into a stop of the whole session.
type recorder struct {
	mu     sync.Mutex // Line, Life and the eof bookkeeping, in wire order
	smu    sync.Mutex // Settle
	sink   Sink
	err    error // the first error; nothing is recorded or forwarded after it
	failed chan struct{}
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
	return nil
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
			if rec.settle() != nil {
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
			if rec.settle() != nil {
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
