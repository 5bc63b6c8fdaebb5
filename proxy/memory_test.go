//go:build unix

package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPeakMemory runs the proxy as a separate process (the test binary in
// proxy mode, or $WITNESS_BIN proxy when set) between a host that sends a
// 1.5 GB line with no newline and a server that sends a million
// notifications at the same time, and asserts that the proxy's peak RSS
// stays under 256 MiB while every byte is recorded and forwarded.
// $WITNESS_MEM_LINE and $WITNESS_MEM_NOTES change the sizes.
func TestPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1.5 GB through the proxy")
	}
	lineSize := int64(1536 << 20)
	notes := 1000000
	if v, err := strconv.ParseInt(os.Getenv("WITNESS_MEM_LINE"), 10, 64); err == nil {
		lineSize = v
	}
	if v, err := strconv.Atoi(os.Getenv("WITNESS_MEM_NOTES")); err == nil {
		notes = v
	}
	const limit = 256 << 20
	server := hostile(t, "firehose")
	out := filepath.Join(t.TempDir(), "rec")
	var cmd *exec.Cmd
	if bin := os.Getenv("WITNESS_BIN"); bin != "" {
		cmd = exec.Command(bin, "proxy", "--out", out, "--", server, strconv.Itoa(notes))
	} else {
		cmd = exec.Command(os.Args[0], server, strconv.Itoa(notes))
		cmd.Env = append(os.Environ(), envProxyMain+"="+out)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	// VmHWM of the proxy process itself, sampled until it exits
	hwm := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		var peak int64
		for {
			if v := vmHWM(cmd.Process.Pid); v > peak {
				peak = v
			}
			select {
			case <-stop:
				hwm <- peak
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	got := make(chan int, 1)
	go func() {
		n := 0
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			l, err := br.ReadSlice('\n')
			if len(l) > 0 && l[len(l)-1] == '\n' {
				n++
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				got <- n
				return
			}
		}
	}()
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for sent := int64(0); sent < lineSize; {
		b := chunk[:min(int64(len(chunk)), lineSize-sent)]
		if _, err := in.Write(b); err != nil {
			t.Fatalf("host write after %d bytes: %v\n%s", sent, err, stderr.String())
		}
		sent += int64(len(b))
	}
	in.Close()
	lines := <-got
	err := cmd.Wait()
	close(stop)
	peakHWM := <-hwm
	if err != nil {
		t.Fatalf("proxy: %v\n%s", err, stderr.String())
	}
	maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("proxy peak RSS: getrusage %d MiB, VmHWM %d MiB (%d MiB line, %d notifications, %s)",
		maxRSS>>20, peakHWM>>20, lineSize>>20, notes, time.Since(start).Round(time.Second))
	if maxRSS >= limit || peakHWM >= limit {
		t.Errorf("peak RSS %d MiB (VmHWM %d MiB), want under %d MiB", maxRSS>>20, peakHWM>>20, limit>>20)
	}
	if lines != notes {
		t.Errorf("the host got %d notifications, want %d", lines, notes)
	}
	if want := fmt.Sprintf("firehose: read %d bytes", lineSize); !strings.Contains(stderr.String(), want) {
		t.Errorf("the server did not get the whole line: %q", stderr.String())
	}
	// the line's last record, at the end of the cassette, holds its length
	tail := fileTail(t, filepath.Join(out, derive.CassetteFile), 64<<10)
	if want := fmt.Sprintf(`"partial":true,"line_bytes":%d,"line_sha256":"`, lineSize); !strings.Contains(tail, want) {
		t.Errorf("the cassette does not end the line with %s:\n%s", want, tail[max(0, len(tail)-2000):])
	}
}

// vmHWM returns the peak resident set size of pid in bytes (0 once gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func fileTail(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	off := max(0, st.Size()-n)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(b)
}
