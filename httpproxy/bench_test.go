package httpproxy

import (
	"bufio"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkAddedLatency measures what the recording proxy adds, with the
// model events deriver of `witness proxy --listen` (derive.ModelDeriver), against
// the scripted model server (testdata/modelserver) answering the requests
// the openai SDK sent in modelapi/testdata/exchanges.jsonl: for a
// non-streamed Chat Completions call with tool calls (json) the round
// trip, for a streamed one (sse) the time to the first chunk. Direct and
// proxied calls take turns call by call, so a change in the machine's load
// hits both alike. It reports each mode's p50 and p99 and the p50 and p99
// of the difference (proxy minus direct, per pair of calls), in µs
// (scripts/bench.d/27-http-proxy.sh prints them as a table).
func BenchmarkAddedLatency(b *testing.B) {
	bodies := map[string]string{}
	for _, f := range readFixtures(b) {
		switch f.Scenario {
		case "chat-tools":
			bodies["json"] = string(f.RequestBody)
		case "chat-text":
			bodies["sse"] = string(f.RequestBody)
		}
	}
	root := testrepo.Root(b)
	ms := goBuild(b, "./testdata/modelserver", b.TempDir())
	model := startDaemon(b, nil, ms, "-listen", "127.0.0.1:0", "-script", filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"))
	upURL := model.URL
	s := startProxy(b, upURL, Options{Deriver: derive.ModelDeriver{}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	// call returns the round trip (json) or the time to the first chunk
	// (sse), reading the rest of the answer afterwards.
	call := func(base, kind string) time.Duration {
		start := time.Now()
		resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(bodies[kind]))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d", kind, resp.StatusCode)
		}
		var d time.Duration
		if kind == "sse" {
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			d = time.Since(start)
			io.Copy(io.Discard, br)
		} else {
			io.Copy(io.Discard, resp.Body)
			d = time.Since(start)
		}
		return d
	}
	for _, kind := range []string{"json", "sse"} {
		if bodies[kind] == "" {
			b.Fatalf("no fixture request for %s", kind)
		}
		b.Run(kind, func(b *testing.B) {
			direct := make([]time.Duration, 0, b.N)
			proxied := make([]time.Duration, 0, b.N)
			added := make([]time.Duration, 0, b.N)
			call(upURL, kind) // warm the connections
			call(s.URL, kind)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var d, p time.Duration
				if i%2 == 0 {
					d, p = call(upURL, kind), call(s.URL, kind)
				} else {
					p, d = call(s.URL, kind), call(upURL, kind)
				}
				direct, proxied, added = append(direct, d), append(proxied, p), append(added, p-d)
			}
			b.StopTimer()
			b.ReportMetric(pct(direct, 50), "direct-p50-µs")
			b.ReportMetric(pct(direct, 99), "direct-p99-µs")
			b.ReportMetric(pct(proxied, 50), "proxy-p50-µs")
			b.ReportMetric(pct(proxied, 99), "proxy-p99-µs")
			b.ReportMetric(pct(added, 50), "added-p50-µs")
			b.ReportMetric(pct(added, 99), "added-p99-µs")
		})
	}
}

// pct returns the p-th percentile of ds in µs.
func pct(ds []time.Duration, p int) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return float64(s[i].Nanoseconds()) / 1e3
}
