package tlog

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// TestInteropIndependentClient checks what witness writes with code that
// is not witness's: the checkpoint's log signature with
// golang.org/x/mod/sumdb/note, the witness's cosignature with
// transparency-dev/formats' cosignature/v1 verifier, and the inclusion and
// consistency proofs with transparency-dev/merkle, the checkpoint body
// parsed here by hand.
func TestInteropIndependentClient(t *testing.T) {
	ctx := context.Background()
	l, dir := newTestLog(t)
	w, c, pub := newTestWitness(t, l.LogKey())
	srv := httptest.NewServer(w)
	defer srv.Close()
	l.witnesses = []string{srv.URL}

	b1, _, err := l.Anchor(ctx, testEntry("s", 2))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(3); i < 9; i++ {
		if _, _, err := l.Anchor(ctx, testEntry("other", i)); err != nil {
			t.Fatal(err)
		}
	}
	b2, _, err := l.Anchor(ctx, testEntry("s", 9))
	if err != nil {
		t.Fatal(err)
	}

	logV, err := note.NewVerifier(l.LogKey())
	if err != nil {
		t.Fatal(err)
	}
	wkey, err := note.NewEd25519VerifierKey(c.Name(), pub)
	if err != nil {
		t.Fatal(err)
	}
	cosigV, err := fnote.NewVerifierForCosignatureV1(wkey)
	if err != nil {
		t.Fatal(err)
	}
	type tree struct {
		size uint64
		root []byte
	}
	open := func(raw []byte) tree {
		t.Helper()
		n, err := note.Open(raw, note.VerifierList(logV, cosigV))
		if err != nil {
			t.Fatalf("sumdb/note: %v\n%s", err, raw)
		}
		if len(n.Sigs) != 2 || len(n.UnverifiedSigs) != 0 {
			t.Fatalf("want the log's signature and one cosignature verified, got %d verified, %d not", len(n.Sigs), len(n.UnverifiedSigs))
		}
		lines := strings.Split(n.Text, "\n")
		if lines[0] != "example.test/log" {
			t.Fatalf("origin %q", lines[0])
		}
		size, err := strconv.ParseUint(lines[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		root, err := base64.StdEncoding.DecodeString(lines[2])
		if err != nil {
			t.Fatal(err)
		}
		return tree{size, root}
	}
	t1, t2 := open(b1.Checkpoint), open(b2.Checkpoint)
	for _, x := range []struct {
		b    interface{ Marshal() ([]byte, error) }
		idx  uint64
		p    [][]byte
		tr   tree
		data func() ([]byte, error)
	}{
		{b1, b1.Index, b1.Proof, t1, b1.Entry.Marshal},
		{b2, b2.Index, b2.Proof, t2, b2.Entry.Marshal},
	} {
		data, err := x.data()
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, x.idx, x.tr.size, rfc6962.DefaultHasher.HashLeaf(data), x.p, x.tr.root); err != nil {
			t.Fatalf("merkle inclusion of %d in %d: %v", x.idx, x.tr.size, err)
		}
	}
	// the log read from its folder by tessera's own client: consistency
	// from the first bundle's tree to the second's
	f := client.FileFetcher{Root: dir}
	pb, err := client.NewProofBuilder(ctx, t2.size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := pb.ConsistencyProof(ctx, t1.size, t2.size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, t1.size, t2.size, cp, t1.root, t2.root); err != nil {
		t.Fatalf("merkle consistency %d -> %d: %v", t1.size, t2.size, err)
	}
	// and a tampered checkpoint fails the independent client too
	bad := []byte(strings.Replace(string(b2.Checkpoint), "\n"+strconv.FormatUint(t2.size, 10)+"\n", "\n"+strconv.FormatUint(t2.size-1, 10)+"\n", 1))
	if _, err := note.Open(bad, note.VerifierList(logV)); err == nil {
		t.Fatal("sumdb/note accepted a checkpoint with a changed size")
	}
}
