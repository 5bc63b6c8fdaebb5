package tlog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/agent-trace-witness/witness/internal/mysqltest"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

const (
	envHelperDSN     = "WITNESS_TLOG_HELPER_DSN"
	envHelperKeyring = "WITNESS_TLOG_HELPER_KEYRING"
	envHelperSession = "WITNESS_TLOG_HELPER_SESSION"
	envHelperN       = "WITNESS_TLOG_HELPER_N"
)

// TestMySQLHelperProcess is one witness process of TestMySQLTwoProcesses:
// it appends N entries of its session at once and checks every bundle.
func TestMySQLHelperProcess(t *testing.T) {
	dsn := os.Getenv(envHelperDSN)
	if dsn == "" {
		t.Skip("helper process of TestMySQLTwoProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv(envHelperN))
	k, err := keyring.OpenExisting(os.Getenv(envHelperKeyring), keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := Open(ctx, Storage{"mysql", dsn}, Options{Origin: "example.test/mysql", Signer: s})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	session := os.Getenv(envHelperSession)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, _, err := l.Anchor(ctx, testEntry(session, int64(i)))
			if err == nil {
				_, err = b.Verify(l.LogKey())
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMySQLTwoProcesses: two witness processes append to one MySQL log at
// once; the log read back is one consistent tree holding every entry of
// both, each once.
func TestMySQLTwoProcesses(t *testing.T) {
	dsn := mysqltest.FreshDatabase(t, mysqltest.DSN(t), "witness_t")
	_, kp := testSigner(t, "log")
	const n = 25
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMySQLHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), envHelperDSN+"="+dsn, envHelperKeyring+"="+kp,
				envHelperSession+"="+fmt.Sprintf("proc%d", p), envHelperN+"="+strconv.Itoa(n))
			outs[p], errs[p] = cmd.CombinedOutput()
		}(p)
	}
	wg.Wait()
	for p := range errs {
		if errs[p] != nil {
			t.Fatalf("process %d: %v\n%s", p, errs[p], outs[p])
		}
	}
	k, err := keyring.OpenExisting(kp, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := k.ActiveSigner()
	ctx := context.Background()
	l, err := Open(ctx, Storage{"mysql", dsn}, Options{Origin: "example.test/mysql", Signer: s})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for p := 0; p < 2; p++ {
		// LookupSession hashes every entry from 0 into the checkpoint's root
		res, err := bundle.LookupSession(ctx, l.Reader(), l.LogKey(), fmt.Sprintf("proc%d", p), 0, nil)
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		if res.Checkpoint.Size != 2*n || res.Scanned != 2*n || res.Entries != n {
			t.Fatalf("process %d: size %d, scanned %d, entries of the session %d; want %d, %d, %d", p, res.Checkpoint.Size, res.Scanned, res.Entries, 2*n, 2*n, n)
		}
	}
}
