// Command hostilehost is a hostile MCP host for the witness tests. It starts
// CMD (normally `witness proxy ... -- SERVER`) with pipes, speaks a proper
// initialize handshake, and then writes the steps of a script to CMD's
// stdin byte for byte: duplicated or case-variant member names, batches,
// values split across lines, huge numbers, gigabyte lines, floods. It keeps
// every line CMD writes back, and reports what it sent (length and sha256
// of the whole stream) so that a test can compare it with the cassette.
//
// Usage:
//
//	hostilehost -script FILE -received FILE -report FILE -- CMD [ARGS...]
//
// The script is a JSON array of steps, each one object with one of:
//
//	{"raw": "TEXT"}                      write TEXT exactly (add \n yourself)
//	{"b64": "BASE64"}                    write these bytes exactly
//	{"big": N, "prefix": P, "suffix": S} write P, then N filler bytes ('a'), then S, streamed
//	{"repeat": N, "raw": "TEXT"}         write TEXT N times, streamed
//	{"wait": "ID", "ms": M}              wait up to M ms for a response whose id token is ID
//	{"sleep": M}                         sleep M ms
//
// After the last step the host closes CMD's stdin and waits for it to exit.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

type step struct {
	Raw    *string `json:"raw,omitempty"`
	B64    string  `json:"b64,omitempty"`
	Big    int64   `json:"big,omitempty"`
	Prefix string  `json:"prefix,omitempty"`
	Suffix string  `json:"suffix,omitempty"`
	Repeat int     `json:"repeat,omitempty"`
	Wait   string  `json:"wait,omitempty"`
	MS     int     `json:"ms,omitempty"`
	Sleep  int     `json:"sleep,omitempty"`
}

// Report is what the host writes to -report.
type Report struct {
	SentBytes  int64    `json:"sent_bytes"`
	SentSHA256 string   `json:"sent_sha256"`
	WriteError string   `json:"write_error,omitempty"`
	Received   int      `json:"received"`
	Missing    []string `json:"missing,omitempty"` // waited-for ids that never came
	ExitCode   int      `json:"exit_code"`
	Killed     bool     `json:"killed,omitempty"`
}

const handshake = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostilehost","version":"1"}}}` + "\n"
const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

func main() {
	script := flag.String("script", "", "script file")
	received := flag.String("received", "", "file to write every line received into")
	report := flag.String("report", "", "file to write the report into")
	exitWait := flag.Duration("exit-wait", 30*time.Second, "how long to wait for CMD after closing its stdin")
	flag.Parse()
	if *script == "" || *received == "" || *report == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: hostilehost -script FILE -received FILE -report FILE -- CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(*script, *received, *report, *exitWait, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "hostilehost:", err)
		os.Exit(1)
	}
}

// idWaiter collects the id tokens of lines received.
type idWaiter struct {
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[string]bool
	done bool
	n    int
}

func (w *idWaiter) add(id string) {
	w.mu.Lock()
	w.ids[id] = true
	w.n++
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *idWaiter) finish() {
	w.mu.Lock()
	w.done = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *idWaiter) wait(id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	defer t.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.ids[id] && !w.done && time.Now().Before(deadline) {
		w.cond.Wait()
	}
	return w.ids[id]
}

// idToken returns the exact id token of a JSON-RPC line, or "".
func idToken(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if dec.Decode(&m) != nil {
		return ""
	}
	return string(bytes.TrimSpace(m["id"]))
}

func run(scriptFile, receivedFile, reportFile string, exitWait time.Duration, argv []string) error {
	data, err := os.ReadFile(scriptFile)
	if err != nil {
		return err
	}
	var steps []step
	if err := json.Unmarshal(data, &steps); err != nil {
		return fmt.Errorf("%s: %w", scriptFile, err)
	}
	recv, err := os.Create(receivedFile)
	if err != nil {
		return err
	}
	defer recv.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := &idWaiter{ids: map[string]bool{}}
	w.cond = sync.NewCond(&w.mu)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer w.finish()
		br := bufio.NewReaderSize(stdout, 1<<20)
		bw := bufio.NewWriter(recv)
		defer bw.Flush()
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				bw.Write(line)
				if id := idToken(line); id != "" {
					w.add(id)
				}
			}
			if err != nil {
				return
			}
		}
	}()

	h := sha256.New()
	var sent int64
	rep := &Report{}
	out := bufio.NewWriterSize(teeWriter{w: stdin, h: h, n: &sent}, 1<<20)
	write := func(b []byte) error {
		_, err := out.Write(b)
		return err
	}
	flush := func() error { return out.Flush() }

	werr := func() error {
		if err := write([]byte(handshake)); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if !w.wait(`"init"`, 20*time.Second) {
			rep.Missing = append(rep.Missing, `"init"`)
		}
		if err := write([]byte(initialized)); err != nil {
			return err
		}
		for i, s := range steps {
			var err error
			switch {
			case s.Wait != "":
				if err = flush(); err == nil && !w.wait(s.Wait, time.Duration(max(s.MS, 1))*time.Millisecond) {
					rep.Missing = append(rep.Missing, s.Wait)
				}
			case s.Sleep > 0:
				if err = flush(); err == nil {
					time.Sleep(time.Duration(s.Sleep) * time.Millisecond)
				}
			case s.B64 != "":
				var b []byte
				if b, err = base64.StdEncoding.DecodeString(s.B64); err == nil {
					err = write(b)
				}
			case s.Big > 0:
				err = writeBig(write, s)
			case s.Repeat > 0 && s.Raw != nil:
				for j := 0; j < s.Repeat && err == nil; j++ {
					err = write([]byte(*s.Raw))
				}
			case s.Raw != nil:
				err = write([]byte(*s.Raw))
			default:
				return fmt.Errorf("%s: step %d: empty step", scriptFile, i)
			}
			if err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return flush()
	}()
	if werr != nil {
		// the proxy may refuse to read on (fail closed): that is a
		// finding for the test, not a failure of the host
		rep.WriteError = werr.Error()
	}
	stdin.Close()

	exited := make(chan error, 1)
	go func() { <-readDone; exited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(exitWait):
		rep.Killed = true
		_ = cmd.Process.Kill()
		waitErr = <-exited
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		rep.ExitCode = ee.ExitCode()
	} else if waitErr != nil {
		return waitErr
	}
	rep.SentBytes = sent
	rep.SentSHA256 = hex.EncodeToString(h.Sum(nil))
	w.mu.Lock()
	rep.Received = w.n
	w.mu.Unlock()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(reportFile, append(b, '\n'), 0o644)
}

// writeBig streams prefix, n filler bytes and suffix.
func writeBig(write func([]byte) error, s step) error {
	if err := write([]byte(s.Prefix)); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for left := s.Big; left > 0; {
		n := min(left, int64(len(chunk)))
		if err := write(chunk[:n]); err != nil {
			return err
		}
		left -= n
	}
	return write([]byte(s.Suffix))
}

// teeWriter writes to w and hashes and counts exactly the bytes w took, so
// a write cut short by a closed pipe is accounted to the byte.
type teeWriter struct {
	w io.Writer
	h io.Writer
	n *int64
}

func (t teeWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.h.Write(p[:n])
	*t.n += int64(n)
	return n, err
}
