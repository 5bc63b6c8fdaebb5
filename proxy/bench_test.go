package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures the round-trip latency of tools/call against
// the fast echo server: direct, through the proxy in-process (forwarding and
// recording), and, when WITNESS_BIN names a witness binary, through
// `witness proxy` as a separate process, as a host runs it. Each reports
// p50 and p99 per round trip (scripts/bench.d/25-proxy.sh prints the
// table). Numbers never gate tests.
func BenchmarkRoundTrip(b *testing.B) {
	server := echo(b)
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(server)
		roundTrips(b, cmd)
	})
	b.Run("proxy-inprocess", func(b *testing.B) {
		hostW, proxyIn := io.Pipe()
		proxyOut, hostR := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), Options{OutDir: filepath.Join(b.TempDir(), "rec"), Command: []string{server},
				Stdin: hostW, Stdout: hostR, Getenv: func(string) string { return "" }})
			hostR.Close()
			done <- err
		}()
		measure(b, proxyIn, proxyOut)
		proxyIn.Close()
		io.Copy(io.Discard, proxyOut)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		hostW.Close()
	})
	if bin := os.Getenv("WITNESS_BIN"); bin != "" {
		b.Run("proxy-binary", func(b *testing.B) {
			cmd := exec.Command(bin, "proxy", "--out", filepath.Join(b.TempDir(), "rec"), "--", server)
			roundTrips(b, cmd)
		})
	}
}

func roundTrips(b *testing.B, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitGroupGone(cmd.Process.Pid, 2*time.Second)
	}()
	measure(b, in, out)
	in.Close()
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// measure does the handshake, then b.N tools/call round trips, and reports
// their p50 and p99 in microseconds.
func measure(b *testing.B, w io.Writer, r io.Reader) {
	br := bufio.NewReader(r)
	rt := func(line string) {
		if _, err := io.WriteString(w, line); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
	}
	rt(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n")
	for i := 0; i < 50; i++ { // warm up
		rt(`{"jsonrpc":"2.0","id":"w","method":"ping"}` + "\n")
	}
	lat := make([]time.Duration, b.N)
	lines := make([]string, b.N)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"round trip %d"}}}`+"\n", i, i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rt(lines[i])
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
