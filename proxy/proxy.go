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
	"github.com/agent-trace-witness/witness/mcp"
)

// Sink receives every line the proxy forwarded and the lifecycle of the
// server, in the order the proxy saw them across the three streams. Sinks
// run on the recorder goroutine, never on a forwarding path; a Sink error
// stops recording, never forwarding.
type Sink interface {
	Line(l WireLine) error
	Life(rec cassette.Record) error
}

// Forwarder runs one server behind the proxy. It is the forwarding core of
// `witness proxy`, usable without any recording.
type Forwarder struct {
	Command []string  // server command and arguments (no shell)
	Env     []string  // server environment; nil inherits the proxy's
	Dir     string    // working directory of the server; "" is the proxy's
	Stdin   io.Reader // the host's side: what the host writes
	Stdout  io.Writer // the host's side: what the host reads; closed at server stdout EOF if it is an io.Closer
	Stderr  io.Writer // the server's stderr is copied here, and the proxy's own messages

	Signals   <-chan os.Signal // signals to forward to the server's process group
	KillGrace time.Duration    // after a forwarded signal or ctx cancel, SIGKILL the group after this (default 5s)
	DrainWait time.Duration    // after the server exits, wait this long for its pipes to reach EOF (default 2s)
	TapLimit  int              // bytes the recorder may lag behind before recording is abandoned (default 256 MiB)
	Sink      Sink             // may be nil
	MaxLine   int              // longer lines reach the Sink in pieces (default 16 MiB)

	// Started, when set, is called with the server's pid once it runs.
	Started func(pid int)
}

// Outcome is what happened to the server and to the recording.
type Outcome struct {
	ExitStatus int    // the server's exit code, or 128+N when signal N ended it
	Signal     string // the signal that ended the server, if any
	Forwarded  []string
	Killed     bool  // the proxy SIGKILLed the group (grace expired or leftovers)
	RecordErr  error // the first recording error; forwarding went on regardless
	Leftovers  bool  // processes of the group outlived the server and were killed
}

// Run starts the server, forwards until the server has exited and its
// output is drained, and returns the outcome. An error means the server
// could not be started.
func (f *Forwarder) Run(ctx context.Context) (*Outcome, error) {
	if len(f.Command) == 0 {
		return nil, errors.New("no server command")
	}
	killGrace := f.KillGrace
	if killGrace <= 0 {
		killGrace = 5 * time.Second
	}
	drainWait := f.DrainWait
	if drainWait <= 0 {
		drainWait = 2 * time.Second
	}
	limit := f.TapLimit
	if limit <= 0 {
		limit = 256 << 20
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
	becomeSubreaper()
	if err := startInGroup(cmd); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("start server %s: %w", f.Command[0], err)
	}
	closeAll(inR, outW, errW) // the child holds its ends now
	pid := cmd.Process.Pid
	if f.Started != nil {
		f.Started(pid)
	}

	q := newTapQueue(limit)
	out := &Outcome{}
	recDone := make(chan error, 1)
	maxLine := f.MaxLine
	if maxLine <= 0 {
		maxLine = mcp.DefaultMaxLine
	}
	go func() { recDone <- record(q, f.Sink, maxLine) }()
	q.lifecycle(cassette.Record{Life: cassette.LifeSpawn})

	// host -> server. Not waited for: it may be blocked reading the host's
	// stdin after the server is gone; it ends when the host closes it.
	go func() {
		if f.Stdin != nil {
			pump(inW, f.Stdin, C2S, q, nil)
		} else {
			q.eof(C2S)
		}
		q.lifecycle(cassette.Record{Life: cassette.LifeStdinClosed})
		inW.Close() // EOF from the host: close the server's stdin
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		pump(f.Stdout, outR, S2C, q, nil)
		if c, ok := f.Stdout.(io.Closer); ok {
			c.Close() // EOF from the server: close the host's stdout
		}
	}()
	go func() {
		defer wg.Done()
		pump(stderr, errR, Stderr, q, nil)
	}()

	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	var killTimer <-chan time.Time
	startKillTimer := func() {
		if killTimer == nil {
			killTimer = time.After(killGrace)
		}
	}
	ctxDone := ctx.Done()
wait:
	for {
		select {
		case <-exited:
			break wait
		case sig := <-f.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok || s == syscall.SIGPIPE {
				continue
			}
			out.Forwarded = append(out.Forwarded, s.String())
			q.lifecycle(cassette.Record{Life: cassette.LifeSignal, Signal: sigName(s), Detail: "forwarded from the host"})
			_ = signalGroup(pid, s)
			startKillTimer()
		case <-ctxDone:
			ctxDone = nil
			q.lifecycle(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGTERM", Detail: "proxy cancelled"})
			_ = signalGroup(pid, syscall.SIGTERM)
			startKillTimer()
		case <-killTimer:
			out.Killed = true
			q.lifecycle(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "the server outlived the grace after a signal"})
			_ = signalGroup(pid, syscall.SIGKILL)
		}
	}

	// The server has exited: drain its stdout and stderr to EOF, unless
	// something else in its group keeps them open.
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainWait):
	}
	if groupAlive(pid) {
		out.Leftovers = true
		out.Killed = true
		q.lifecycle(cassette.Record{Life: cassette.LifeSignal, Signal: "SIGKILL", Detail: "processes of the server's group outlived it"})
		_ = signalGroup(pid, syscall.SIGKILL)
		waitGroupGone(pid, drainWait)
	}
	select {
	case <-drained:
		closeAll(outR, errR)
	case <-time.After(drainWait):
		// something outside the group holds the pipes open: stop waiting
		// (a blocked read on a blocking pipe outlives close; the goroutine
		// ends when that holder exits)
	}

	out.ExitStatus = exitStatus(cmd.ProcessState)
	exitRec := cassette.Record{Life: cassette.LifeExit, Status: cmd.ProcessState.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = sigName(ws.Signal())
	} else {
		code := cmd.ProcessState.ExitCode()
		exitRec.Code = &code
	}
	q.lifecycle(exitRec)
	q.close()
	out.RecordErr = <-recDone
	return out, nil
}

// pump copies src to dst chunk by chunk, handing each chunk to the queue
// before writing it. A failed write (the reader went away) stops writing
// but not reading, so the other side never blocks and everything is still
// recorded.
func pump(dst io.Writer, src io.Reader, dir Dir, q *tapQueue, _ func()) {
	buf := make([]byte, 64<<10)
	writeOK := dst != nil
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q.push(dir, buf[:n])
			if writeOK {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					writeOK = false
				}
			}
		}
		if err != nil {
			q.eof(dir)
			return
		}
	}
}

// record drains the queue into the sink, line by line. After the first sink
// error it keeps draining (so nothing blocks) but stops calling the sink.
func record(q *tapQueue, sink Sink, maxLine int) error {
	var firstErr error
	split := map[Dir]*lineSplitter{C2S: {max: maxLine}, S2C: {max: maxLine}}
	// The server's stdout and stderr reach EOF in a racy order; their eof
	// records are written together, stdout first, once both ended (or at
	// exit), so that the same session gives the same cassette.
	serverEOF := map[Dir]bool{}
	flushServerEOF := func() {
		for _, d := range []Dir{S2C, Stderr} {
			if serverEOF[d] && firstErr == nil && sink != nil {
				if err := sink.Life(cassette.Record{Life: cassette.LifeEOF, Stream: d}); err != nil {
					firstErr = err
				}
			}
			delete(serverEOF, d)
		}
	}
	for {
		items, overflow, ok := q.pop()
		if overflow {
			if firstErr == nil {
				firstErr = errors.New("recording fell too far behind the wire and was abandoned")
			}
			// the queue drops everything from now on; nothing waits on us
			return firstErr
		}
		if !ok {
			break
		}
		for _, it := range items {
			if sink == nil || firstErr != nil {
				continue
			}
			emit := func(data []byte, partial, cont bool) {
				if firstErr != nil {
					return
				}
				if err := sink.Line(WireLine{Dir: it.dir, Data: data, Partial: partial, Cont: cont}); err != nil {
					firstErr = err
				}
			}
			switch {
			case it.life != nil:
				if it.life.Life == cassette.LifeExit {
					flushServerEOF()
				}
				if firstErr == nil {
					if err := sink.Life(*it.life); err != nil {
						firstErr = err
					}
				}
			case it.eof:
				if sp := split[it.dir]; sp != nil {
					sp.flush(emit)
				}
				if it.dir != C2S {
					serverEOF[it.dir] = true
					if serverEOF[S2C] && serverEOF[Stderr] {
						flushServerEOF()
					}
					continue
				}
				if firstErr == nil {
					if err := sink.Life(cassette.Record{Life: cassette.LifeEOF, Stream: it.dir}); err != nil {
						firstErr = err
					}
				}
			case it.dir == Stderr:
				emit(it.b, false, false)
			default:
				split[it.dir].feed(it.b, emit)
			}
		}
	}
	return firstErr
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

// blockingPipe returns a pipe in blocking mode. Reads then block in the
// kernel instead of going through the runtime's poller, which saves two
// wake-ups per hop: the proxy's added latency is mostly wake-ups.
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
