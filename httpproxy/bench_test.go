package httpproxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkAddedLatency measures what the recording proxy adds, against a
// local upstream: for a non-streamed call (json) the round trip, for a
// streamed one (sse) the time to the first chunk. Direct and proxied calls
// take turns call by call, so a change in the machine's load hits both
// alike. It reports each mode's p50 and p99 and the p50 and p99 of the
// difference (proxy minus direct, per pair of calls), in µs
// (scripts/bench.d/27-http-proxy.sh prints them as a table).
func BenchmarkAddedLatency(b *testing.B) {
	answer := strings.Repeat(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hello there"}}]}`, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/sse" {
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			for i := 0; i < 8; i++ {
				io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"tok\"}}]}\n\n")
				rc.Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer up.Close()
	s := startProxy(b, up.URL, Options{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

	// call returns the round trip (json) or the time to the first chunk
	// (sse), reading the rest of the answer afterwards.
	call := func(base, path string) time.Duration {
		start := time.Now()
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var d time.Duration
		if path == "/v1/sse" {
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
		path := "/v1/" + kind
		b.Run(kind, func(b *testing.B) {
			direct := make([]time.Duration, 0, b.N)
			proxied := make([]time.Duration, 0, b.N)
			added := make([]time.Duration, 0, b.N)
			call(up.URL, path) // warm the connections
			call(s.URL, path)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var d, p time.Duration
				if i%2 == 0 {
					d, p = call(up.URL, path), call(s.URL, path)
				} else {
					p, d = call(s.URL, path), call(up.URL, path)
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
