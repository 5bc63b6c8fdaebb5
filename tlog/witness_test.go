package tlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/tlog/bundle"
)

func newTestWitness(t *testing.T, logKey string) (*Witness, *Cosigner, ed25519.PublicKey) {
	t.Helper()
	s, _ := testSigner(t, "witness")
	c, err := NewCosigner("w1.example", s)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWitness(WitnessOptions{Cosigner: c, Logs: []string{logKey}, State: filepath.Join(t.TempDir(), "state"),
		Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return w, c, c.pub
}

// TestWitnessCosignsConsistentCheckpoints drives the log's witness client
// against the witness: first contact, a 409 answered with a consistency
// proof, then an idle repeat; every cosignature verifies.
func TestWitnessCosignsConsistentCheckpoints(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLog(t)
	w, c, pub := newTestWitness(t, l.LogKey())
	srv := httptest.NewServer(w)
	defer srv.Close()
	l.witnesses = []string{srv.URL}
	ws := []bundle.Witness{{Name: c.Name(), Key: pub}}
	for i := int64(1); i <= 3; i++ {
		b, warn, err := l.Anchor(ctx, testEntry("s", i))
		if err != nil || len(warn) != 0 {
			t.Fatalf("anchor %d: %v %v", i, err, warn)
		}
		cp, err := b.Verify("")
		if err != nil {
			t.Fatal(err)
		}
		cs, err := cp.Cosignatures(ws)
		if err != nil || len(cs) != 1 || cs[0].Time != 1700000000 {
			t.Fatalf("anchor %d: cosignatures %+v %v", i, cs, err)
		}
	}
	st, err := w.load("example.test/log")
	if err != nil || st.Size != 3 {
		t.Fatalf("witness state %+v %v", st, err)
	}
}

// signedCheckpoint signs a checkpoint body with the log's note signer.
func signedCheckpoint(t *testing.T, l *Log, s note.Signer, size int, root []byte) []byte {
	t.Helper()
	body := l.origin + "\n" + strconv.Itoa(size) + "\n" + base64.StdEncoding.EncodeToString(root) + "\n"
	raw, err := note.Sign(&note.Note{Text: body}, s)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestWitnessRefusesSplitView: two checkpoints of the same size with
// different roots, both signed by the log. The witness cosigns the first
// and refuses the second (422), and its state still holds the first root;
// a smaller size is refused with the size it holds (409).
func TestWitnessRefusesSplitView(t *testing.T) {
	s, _ := testSigner(t, "log")
	l := &Log{origin: "example.test/log"}
	ns, vkey, err := NoteSigner(l.origin, s)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _ := newTestWitness(t, vkey)
	rootA := make([]byte, 32)
	rootB := make([]byte, 32)
	rootB[0] = 1
	a := signedCheckpoint(t, l, ns, 5, rootA)
	b := signedCheckpoint(t, l, ns, 5, rootB)
	if _, err := w.addCheckpoint(append([]byte("old 0\n\n"), a...)); err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	_, err = w.addCheckpoint(append([]byte("old 5\n\n"), b...))
	if we, ok := err.(*witnessError); !ok || we.status != 422 {
		t.Fatalf("split view: got %v, want 422", err)
	}
	if _, err := w.addCheckpoint(append([]byte("old 5\n\n"), a...)); err != nil {
		t.Fatalf("the same checkpoint again: %v", err)
	}
	_, err = w.addCheckpoint(append([]byte("old 0\n\n"), b...))
	if we, ok := err.(*witnessError); !ok || we.status != 409 || we.size != 5 {
		t.Fatalf("stale old size: got %v, want 409 with size 5", err)
	}
	st, _ := w.load(l.origin)
	if st.Size != 5 || string(st.Root) != string(rootA) {
		t.Fatalf("state changed: %+v", st)
	}
	// a checkpoint the log did not sign
	other, _ := testSigner(t, "other")
	os, _, _ := NoteSigner(l.origin, other)
	_, err = w.addCheckpoint(append([]byte("old 5\n\n"), signedCheckpoint(t, l, os, 6, rootA)...))
	if we, ok := err.(*witnessError); !ok || we.status != 403 {
		t.Fatalf("forged checkpoint: got %v, want 403", err)
	}
}

// TestQuorumCountsKeysNotNames: one witness key listed under two names,
// its cosignature copied under the second name, counts once.
func TestQuorumCountsKeysNotNames(t *testing.T) {
	s, _ := testSigner(t, "log")
	l := &Log{origin: "example.test/log"}
	ns, vkey, _ := NoteSigner(l.origin, s)
	raw := signedCheckpoint(t, l, ns, 1, make([]byte, 32))
	ws, _ := testSigner(t, "w")
	c1, _ := NewCosigner("w1", ws)
	c2, _ := NewCosigner("w2", ws)
	cp, _ := bundle.OpenCheckpoint(raw, vkey)
	l1, _ := c1.cosign(cp.Body, 10)
	l2, _ := c2.cosign(cp.Body, 10)
	raw = bundle.AddSignatures(raw, []byte(l1+l2))
	cp, err := bundle.OpenCheckpoint(raw, vkey)
	if err != nil {
		t.Fatal(err)
	}
	trusted := []bundle.Witness{{Name: "w1", Key: c1.pub}, {Name: "w2", Key: c1.pub}}
	cs, err := cp.Cosignatures(trusted)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || bundle.DistinctWitnesses(cs) != 1 {
		t.Fatalf("got %d cosignatures by %d distinct witnesses, want 2 by 1", len(cs), bundle.DistinctWitnesses(cs))
	}
	// a second, distinct witness makes two
	ws2, _ := testSigner(t, "w3")
	c3, _ := NewCosigner("w3", ws2)
	l3, _ := c3.cosign(cp.Body, 11)
	cp, _ = bundle.OpenCheckpoint(bundle.AddSignatures(raw, []byte(l3)), vkey)
	cs, _ = cp.Cosignatures(append(trusted, bundle.Witness{Name: "w3", Key: c3.pub}))
	if bundle.DistinctWitnesses(cs) != 2 {
		t.Fatalf("distinct witnesses %d, want 2", bundle.DistinctWitnesses(cs))
	}
	// a cosignature over another checkpoint, pasted in, is tampering
	bad := strings.Replace(l3, l3[len(l3)-10:len(l3)-1], "AAAAAAAAA", 1)
	cp, _ = bundle.OpenCheckpoint(bundle.AddSignatures(raw, []byte(bad)), vkey)
	if _, err := cp.Cosignatures([]bundle.Witness{{Name: "w3", Key: c3.pub}}); err == nil {
		t.Fatal("a changed cosignature verified")
	}
}
