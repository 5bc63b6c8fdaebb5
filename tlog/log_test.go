package tlog

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// testSigner returns the active Ed25519 key of a new file keyring.
func testSigner(t testing.TB, name string) (keyring.Signer, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".json")
	if _, err := keyring.Generate(p, keyring.Options{}, keyring.AlgEd25519); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.OpenExisting(p, keyring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.ActiveSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func testEntry(session string, count int64) bundle.Entry {
	h := fmt.Sprintf("%064x", count)
	return bundle.Entry{Session: session, Count: count, Head: h, EndSignatureDigest: strings.Repeat("a", 64)}
}

func newTestLog(t *testing.T) (*Log, string) {
	t.Helper()
	ctx := context.Background()
	s, kp := testSigner(t, "log")
	dir := filepath.Join(t.TempDir(), "log")
	cfg, err := Init(ctx, dir, Config{Origin: "example.test/log", Keyring: kp}, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, Storage{"posix", dir}, Options{Origin: cfg.Origin, Signer: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l, dir
}

func TestAnchorAndLookup(t *testing.T) {
	ctx := context.Background()
	l, dir := newTestLog(t)
	var bs []*bundle.Bundle
	for i, e := range []bundle.Entry{testEntry("s1", 3), testEntry("s2", 5), testEntry("s1", 7), testEntry("s3", 2)} {
		b, _, err := l.Anchor(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if b.Index != uint64(i) {
			t.Fatalf("entry %d at index %d", i, b.Index)
		}
		bs = append(bs, b)
	}
	// a bundle round-trips and verifies offline; a changed entry does not
	data, err := bs[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b0, err := bundle.Parse(data, "b0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b0.Verify(""); err != nil {
		t.Fatalf("offline verify: %v", err)
	}
	b0.Entry.Count = 4
	if _, err := b0.Verify(""); !errors.Is(err, bundle.ErrInclusion) {
		t.Fatalf("changed entry: got %v, want ErrInclusion", err)
	}
	// the log knows a later entry of s1 than the first bundle
	r, key, err := Reader(ctx, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	cp0, err := bs[0].Verify("")
	if err != nil {
		t.Fatal(err)
	}
	res, err := bundle.LookupSession(ctx, r, key, "s1", bs[0].Index, cp0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Latest == nil || res.Latest.Count != 7 || res.LatestIndex != 2 || res.Entries != 2 {
		t.Fatalf("lookup s1: %+v latest %+v", res, res.Latest)
	}
	res, err = bundle.LookupSession(ctx, r, key, "nobody", 0, nil)
	if err != nil || res.Latest != nil || res.Scanned != 4 {
		t.Fatalf("lookup nobody: %+v %v", res, err)
	}
	// the same through the HTTP personality
	srv := httptest.NewServer(Handler(l, t.Logf))
	defer srv.Close()
	b, err := AnchorRemote(ctx, srv.URL, testEntry("s1", 9), "")
	if err != nil {
		t.Fatal(err)
	}
	hr, hkey, err := Reader(ctx, srv.URL, 0)
	if err != nil || hkey != key {
		t.Fatalf("remote reader: key %q vs %q, %v", hkey, key, err)
	}
	res, err = bundle.LookupSession(ctx, hr, key, "s1", 0, nil)
	if err != nil || res.Latest == nil || res.Latest.Count != 9 || res.LatestIndex != b.Index {
		t.Fatalf("remote lookup: %+v %v", res, err)
	}
}
