package verify

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

func anchorSigner(t *testing.T, name string) keyring.Signer {
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
	return s
}

func pubOf(t *testing.T, s keyring.Signer) ed25519.PublicKey {
	b, err := base64.StdEncoding.DecodeString(s.(keyring.PublicKeyer).PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func anchorCodes(r *Report) map[string]Class {
	m := map[string]Class{}
	for _, f := range r.Findings {
		if f.Check == CheckAnchor {
			m[f.Code] = f.Class
		}
	}
	return m
}

// TestAnchorQuorumDistinctWitnesses: --log-quorum counts witnesses by key
// material. A cosignature copied under a second name of the same key
// (the trust file lists the key twice) counts once: quorum 2 is not met;
// two witnesses with their own keys meet it; a changed cosignature by a
// trusted witness is tampering.
func TestAnchorQuorumDistinctWitnesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(events)
	if err != nil {
		t.Fatal(err)
	}
	if err := synthlog.Generate(f, 20, 1, "q1"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	logKey := anchorSigner(t, "log")
	witnessSigners := map[string]keyring.Signer{}
	var ws []Witness
	for _, name := range []string{"w1", "w2"} {
		s := anchorSigner(t, name)
		witnessSigners[name] = s
		ws = append(ws, Witness{Name: name, Key: pubOf(t, s)})
	}
	logDir := filepath.Join(dir, "log")
	cfg, err := tlog.Init(ctx, logDir, tlog.Config{Origin: "example.test/q", Keyring: filepath.Join(dir, "log.json")}, logKey)
	if err != nil {
		t.Fatal(err)
	}
	// anchorWith anchors the events' end, cosigned by the named witnesses
	// (each a tlog-witness over HTTP with a fresh state)
	round := 0
	anchorWith := func(names ...string) *bundle.Bundle {
		t.Helper()
		round++
		var urls []string
		for _, n := range names {
			c, err := tlog.NewCosigner(n, witnessSigners[n])
			if err != nil {
				t.Fatal(err)
			}
			w, err := tlog.NewWitness(tlog.WitnessOptions{Cosigner: c, Logs: []string{cfg.LogKey}, State: filepath.Join(dir, "state", n, strconv.Itoa(round))})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(w)
			t.Cleanup(srv.Close)
			urls = append(urls, srv.URL)
		}
		l, err := tlog.Open(ctx, tlog.Storage{Kind: "posix", Arg: logDir}, tlog.Options{Origin: cfg.Origin, Signer: logKey, Witnesses: urls})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		e, err := bundle.EntryOfFile(events)
		if err != nil {
			t.Fatal(err)
		}
		b, warn, err := l.Anchor(ctx, e)
		if err != nil || len(warn) > 0 {
			t.Fatalf("anchor: %v %v", err, warn)
		}
		return b
	}
	write := func(b *bundle.Bundle) {
		t.Helper()
		data, err := b.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := bundle.Path(events, b.Entry.Count)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(trust []Witness, quorum int) map[string]Class {
		t.Helper()
		r := &Report{}
		if err := CheckAnchoring(r, events, &AnchorOptions{LogKey: cfg.LogKey, Witnesses: trust, Quorum: quorum}); err != nil {
			t.Fatal(err)
		}
		return anchorCodes(r)
	}

	// w1 alone, its cosignature copied under the alias "w1-alias"
	b := anchorWith("w1")
	line := strings.SplitAfter(string(b.Checkpoint), "\n")
	var w1line string
	for _, l := range line {
		if strings.HasPrefix(l, "— w1 ") {
			w1line = l
		}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.TrimPrefix(w1line, "— w1 ")))
	if err != nil || w1line == "" {
		t.Fatalf("no w1 cosignature in\n%s", b.Checkpoint)
	}
	binary.BigEndian.PutUint32(raw, bundle.KeyHash("w1-alias", bundle.AlgCosignatureV1, ws[0].Key))
	b.Checkpoint = bundle.AddSignatures(b.Checkpoint, []byte("— w1-alias "+base64.StdEncoding.EncodeToString(raw)+"\n"))
	write(b)
	alias := []Witness{ws[0], {Name: "w1-alias", Key: ws[0].Key}}
	if got := check(alias, 2); got["anchor-quorum"] != ClassViolation {
		t.Fatalf("one key under two names met quorum 2: %v", got)
	}
	if got := check(alias, 1); got["anchor-quorum"] != "" || got["anchored"] != ClassNotice {
		t.Fatalf("quorum 1: %v", got)
	}

	// w1 and w2, each with its own key: quorum 2 met
	os.RemoveAll(events + ".tlog")
	write(anchorWith("w1", "w2"))
	if got := check(ws, 2); got["anchor-quorum"] != "" || got["anchored"] != ClassNotice {
		t.Fatalf("two witnesses, quorum 2: %v", got)
	}
	if got := check(ws, 3); got["anchor-quorum"] != ClassViolation {
		t.Fatalf("two witnesses, quorum 3: %v", got)
	}

	// a changed cosignature by a trusted witness
	b2, err := bundle.ReadFile(bundle.Path(events, 20-1))
	if err != nil {
		t.Fatal(err)
	}
	cp := string(b2.Checkpoint)
	i := strings.Index(cp, "— w2 ")
	b2.Checkpoint = []byte(cp[:i+20] + flip(cp[i+20]) + cp[i+21:])
	os.RemoveAll(events + ".tlog")
	write(b2)
	if got := check(ws, 1); got["anchor-cosignature"] != ClassTampered {
		t.Fatalf("changed cosignature: %v", got)
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}
