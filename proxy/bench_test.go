package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"
)

// envBenchHop makes the test binary a bare hop (see TestMain): the
// Forwarder without a Sink between its stdio and the server command in its
// arguments, with the memory settings of `witness proxy`.
const envBenchHop = "WITNESS_PROXY_BENCH_HOP"

func hopMain(command []string) int {
	debug.SetMemoryLimit(MemoryLimit)
	debug.SetGCPercent(GCPercent)
	fw := &Forwarder{Command: command, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SoleChild: true}
	out, err := fw.Run(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "hop: %v\n", err)
		return 5
	}
	return out.ExitStatus
}

// benchServer is a server the round-trip benchmark talks to: its command
// and the tools/call line of round trip i.
type benchServer struct {
	name    string
	command func(testing.TB) []string
	call    func(i int) string
}

func benchServers() []benchServer {
	return []benchServer{
		{"echo", func(tb testing.TB) []string { return []string{echo(tb)} }, func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"round trip %d"}}}`+"\n", i, i)
		}},
		{"everything", everythingCommand, func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"round trip %d"}}}`+"\n", i, i)
		}},
	}
}

// everythingCommand is the command of the pinned server-everything peer,
// launched with node; the benchmark is skipped when the peers are missing.
func everythingCommand(tb testing.TB) []string {
	tb.Helper()
	script, _ := filepath.Abs("../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); serr != nil || err != nil {
		tb.Skip("npm peers missing: run 'make peers'")
	}
	return []string{node, script, "stdio"}
}

// BenchmarkRoundTrip measures the round-trip latency of tools/call against
// the fast echo server and against server-everything (node): direct,
// through a bare hop (the test binary as a process that runs the Forwarder
// without a Sink: the floor of one extra process, as `witness proxy` starts
// the server, recording nothing), through `witness proxy` as a separate
// process, as a host runs it (when WITNESS_BIN names a witness binary),
// and through the proxy library in-process. The modes run side by side and take turns round trip by round
// trip, so that a load change on the machine hits them alike. It reports
// p50 and p99 per mode and the ratio of each mode's p50 to direct
// (scripts/bench.d/25-proxy.sh prints the table). $PROXY_BENCH_SERVERS
// (e.g. "everything") selects servers; $WITNESS_BIN_BASE (comma-separated
// paths) adds modes "base", "base2", ... (other witness binaries, for A/B
// runs); PROXY_BENCH_INPROCESS=0 leaves out the in-process mode and
// PROXY_BENCH_HOP=0 the bare hop. Numbers never gate tests.
func BenchmarkRoundTrip(b *testing.B) {
	only := os.Getenv("PROXY_BENCH_SERVERS")
	for _, s := range benchServers() {
		if only != "" && !strings.Contains(","+only+",", ","+s.name+",") {
			continue
		}
		b.Run(s.name, func(b *testing.B) {
			command := s.command(b)
			var modes []*benchConn
			modes = append(modes, startConn(b, "direct", exec.Command(command[0], command[1:]...)))
			if os.Getenv("PROXY_BENCH_HOP") != "0" {
				// the floor: the same process hop (own session, pumps)
				// without recording
				hop := exec.Command(os.Args[0], command...)
				hop.Env = append(os.Environ(), envBenchHop+"=1")
				modes = append(modes, startConn(b, "hop", hop))
			}
			if bin := os.Getenv("WITNESS_BIN"); bin != "" {
				args := append([]string{"proxy", "--out", filepath.Join(b.TempDir(), "rec"), "--"}, command...)
				modes = append(modes, startConn(b, "proxy", exec.Command(bin, args...)))
			}
			for i, bin := range strings.Split(os.Getenv("WITNESS_BIN_BASE"), ",") {
				if bin == "" {
					continue
				}
				// other witness binaries (e.g. a build of main) for A/B
				// comparisons in the same alternating run
				name := "base"
				if i > 0 {
					name = fmt.Sprintf("base%d", i+1)
				}
				args := append([]string{"proxy", "--out", filepath.Join(b.TempDir(), "rec-"+name), "--"}, command...)
				modes = append(modes, startConn(b, name, exec.Command(bin, args...)))
			}
			if os.Getenv("PROXY_BENCH_INPROCESS") != "0" {
				modes = append(modes, startInProcess(b, command))
			}
			for _, m := range modes {
				m.handshake(b)
			}
			lines := make([]string, b.N)
			ids := make([]string, b.N)
			for i := range lines {
				lines[i] = s.call(i)
				ids[i] = fmt.Sprintf(`"id":%d`, i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range modes {
					m := modes[(i+k)%len(modes)] // rotate who goes first
					t0 := time.Now()
					m.rt(b, lines[i], ids[i])
					m.lat = append(m.lat, time.Since(t0))
				}
			}
			b.StopTimer()
			var direct float64
			for _, m := range modes {
				p50, p99 := m.percentiles()
				if m.name == "direct" {
					direct = p50
				}
				b.ReportMetric(p50, m.name+"-p50-µs")
				b.ReportMetric(p99, m.name+"-p99-µs")
				if m.name != "direct" && direct > 0 {
					b.ReportMetric(p50/direct, m.name+"-p50-ratio")
				}
			}
			for _, m := range modes {
				m.stop(b)
				if m.cpu > 0 {
					// CPU time of the process and the children it reaped
					// (for a proxy: the server), per round trip
					b.ReportMetric(float64(m.cpu.Microseconds())/float64(len(m.lat)), m.name+"-cpu-µs/op")
				}
			}
		})
	}
}

// benchConn is one way of talking to the server: direct, through the proxy
// binary or through the proxy library.
type benchConn struct {
	name string
	w    io.WriteCloser
	br   *bufio.Reader
	lat  []time.Duration
	stop func(b *testing.B)
	cpu  time.Duration // set by stop for processes
}

func startConn(b *testing.B, name string, cmd *exec.Cmd) *benchConn {
	ownGroup(cmd)
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
	c := &benchConn{name: name, w: in, br: bufio.NewReader(out)}
	c.stop = func(b *testing.B) {
		in.Close()
		io.Copy(io.Discard, c.br)
		_ = cmd.Wait()
		c.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		killGroup(cmd)
		waitGroupGone(cmd.Process.Pid, 2*time.Second)
	}
	return c
}

func startInProcess(b *testing.B, command []string) *benchConn {
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Options{OutDir: filepath.Join(b.TempDir(), "rec"), Command: command,
			Stdin: hostW, Stdout: hostR, Getenv: func(string) string { return "" }})
		hostR.Close()
		done <- err
	}()
	c := &benchConn{name: "inprocess", w: proxyIn, br: bufio.NewReader(proxyOut)}
	c.stop = func(b *testing.B) {
		proxyIn.Close()
		io.Copy(io.Discard, proxyOut)
		if err := <-done; err != nil {
			b.Error(err)
		}
		hostW.Close()
	}
	return c
}

// rt writes line and reads until the line that carries id (notifications in
// between are skipped).
func (c *benchConn) rt(b *testing.B, line, id string) {
	if _, err := io.WriteString(c.w, line); err != nil {
		b.Fatalf("%s: %v", c.name, err)
	}
	for {
		l, err := c.br.ReadString('\n')
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		// the id token, followed by what may follow a value
		if j := strings.Index(l, id); j >= 0 && j+len(id) < len(l) && strings.IndexByte(",}", l[j+len(id)]) >= 0 {
			return
		}
	}
}

// handshake does initialize and 50 warm-up pings.
func (c *benchConn) handshake(b *testing.B) {
	c.rt(b, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`+"\n", `"id":"init"`)
	io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for i := 0; i < 50; i++ {
		c.rt(b, `{"jsonrpc":"2.0","id":"w","method":"ping"}`+"\n", `"id":"w"`)
	}
}

func (c *benchConn) percentiles() (p50, p99 float64) {
	lat := append([]time.Duration(nil), c.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3
	}
	return pct(0.50), pct(0.99)
}
