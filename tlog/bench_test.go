package tlog

import (
	"context"
	"fmt"
	"github.com/agent-trace-witness/witness/internal/mysqltest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/tlog/bundle"
	"github.com/transparency-dev/tessera/client"
)

// benchConcurrent is how many sessions anchor at once in the append
// benchmarks: many witnesses ending sessions against one log.
const benchConcurrent = 500

func benchLog(b *testing.B, kind string) *Log {
	b.Helper()
	ctx := context.Background()
	s, kp := testSigner(b, "log")
	var st Storage
	switch kind {
	case "posix":
		dir := filepath.Join(b.TempDir(), "log")
		if _, err := Init(ctx, dir, Config{Origin: "example.test/bench", Keyring: kp}, s); err != nil {
			b.Fatal(err)
		}
		st = Storage{"posix", dir}
	case "mysql":
		dsn := os.Getenv(mysqltest.EnvDSN)
		if dsn == "" {
			b.Skipf("%s not set (scripts/bench.d/60-tlog.sh starts MariaDB through .ci/with-services)", mysqltest.EnvDSN)
		}
		st = Storage{"mysql", mysqltest.FreshDatabase(b, dsn, "witness_t")}
	}
	l, err := Open(ctx, st, Options{Origin: "example.test/bench", Signer: s})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// BenchmarkTlogAnchor: benchConcurrent sessions anchor their end at once
// (entry appended, integrated, checkpoint published, inclusion proof built);
// anchors/s is the log's throughput on this machine.
func BenchmarkTlogAnchor(b *testing.B) {
	for _, kind := range []string{"posix", "mysql"} {
		b.Run(kind, func(b *testing.B) {
			l := benchLog(b, kind)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				errs := make(chan error, benchConcurrent)
				for j := 0; j < benchConcurrent; j++ {
					wg.Add(1)
					go func(j int) {
						defer wg.Done()
						_, _, err := l.Anchor(ctx, testEntry(fmt.Sprintf("b%d-%d", i, j), 3))
						errs <- err
					}(j)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*benchConcurrent)/time.Since(start).Seconds(), "anchors/s")
		})
	}
}

// BenchmarkTlogVerifyLocal: a log of size entries (POSIX, local); the
// bundle of the first session's end is checked offline (inclusion and
// checkpoint signature) and against the log (consistency, then every later
// entry read and hashed into the signed root): what 'verify --log DIR'
// adds. It reports the size of entry 0's inclusion proof and of a bundle
// at the final size.
func BenchmarkTlogVerifyLocal(b *testing.B) {
	for _, size := range []int{1000, 10000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			l := benchLog(b, "posix")
			ctx := context.Background()
			var first *bundle.Bundle
			for done := 0; done < size; done += benchConcurrent {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for j := 0; j < benchConcurrent && done+j < size; j++ {
					wg.Add(1)
					go func(k int) {
						defer wg.Done()
						bb, _, err := l.Anchor(ctx, testEntry(fmt.Sprintf("v%d", k), 3))
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						if first == nil || bb.Index < first.Index {
							first = bb
						}
						mu.Unlock()
					}(done + j)
				}
				wg.Wait()
			}
			// a bundle of the first entry at the final size
			last, _, err := l.Anchor(ctx, testEntry("last", 3))
			if err != nil {
				b.Fatal(err)
			}
			data, _ := last.Marshal()
			// the inclusion proof of entry 0 at the final size: the longest
			pb, err := client.NewProofBuilder(ctx, last.Index+1, l.reader.ReadTile)
			if err != nil {
				b.Fatal(err)
			}
			p0, err := pb.InclusionProof(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			proofBytes := 32 * len(p0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cp, err := first.Verify("")
				if err != nil {
					b.Fatal(err)
				}
				res, err := bundle.LookupSession(ctx, l.Reader(), l.LogKey(), first.Entry.Session, first.Index, cp)
				if err != nil || res.Latest == nil {
					b.Fatalf("lookup: %v", err)
				}
			}
			b.ReportMetric(float64(proofBytes), "proof-B")
			b.ReportMetric(float64(len(data)), "bundle-B")
		})
	}
}
