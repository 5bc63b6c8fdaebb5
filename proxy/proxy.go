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
)

// LineSink receives every line the proxy forwarded, in the order the proxy
// saw them across the three streams. A line includes its '\n' unless partial
// (the bytes left when a stream ended). Sinks run on the recorder goroutine,
// never on a forwarding path.
type LineSink interface {
	Line(dir Dir, line []byte, partial bool) error
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
	Sink      LineSink         // may be nil

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

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("server stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("server stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
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
	go func() { recDone <- record(q, f.Sink) }()

	// host -> server. Not waited for: it may be blocked reading the host's
	// stdin after the server is gone; it ends when the host closes it.
	go func() {
		if f.Stdin != nil {
			pump(inW, f.Stdin, C2S, q, nil)
		} else {
			q.eof(C2S)
		}
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
			_ = signalGroup(pid, s)
			startKillTimer()
		case <-ctxDone:
			ctxDone = nil
			_ = signalGroup(pid, syscall.SIGTERM)
			startKillTimer()
		case <-killTimer:
			out.Killed = true
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
		_ = signalGroup(pid, syscall.SIGKILL)
		waitGroupGone(pid, drainWait)
	}
	select {
	case <-drained:
	case <-time.After(drainWait):
		closeAll(outR, errR)
		<-drained
	}
	closeAll(outR, errR)

	q.close()
	out.RecordErr = <-recDone
	out.ExitStatus = exitStatus(cmd.ProcessState)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = ws.Signal().String()
	}
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
func record(q *tapQueue, sink LineSink) error {
	var firstErr error
	split := map[Dir]*lineSplitter{C2S: {}, S2C: {}, Stderr: {}}
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
			emit := func(line []byte, partial bool) {
				if sink == nil || firstErr != nil {
					return
				}
				if err := sink.Line(it.dir, line, partial); err != nil {
					firstErr = err
				}
			}
			if it.eof {
				split[it.dir].flush(emit)
				continue
			}
			split[it.dir].feed(it.b, emit)
		}
	}
	return firstErr
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
