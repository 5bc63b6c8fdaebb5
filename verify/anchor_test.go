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
		if f.Check == checkAnchor {
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
	var ws []witness
	for _, name := range []string{"w1", "w2"} {
		s := anchorSigner(t, name)
		witnessSigners[name] = s
		ws = append(ws, witness{Name: name, Key: pubOf(t, s)})
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
	check := func(trust []witness, quorum int) map[string]Class {
		t.Helper()
		r := &Report{}
		if err := checkAnchoring(r, events, &AnchorOptions{LogKey: cfg.LogKey, Witnesses: trust, Quorum: quorum}); err != nil {
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
	alias := []witness{ws[0], {Name: "w1-alias", Key: ws[0].Key}}
	if got := check(alias, 2); got["anchor-quorum"] != classViolation {
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
	if got := check(ws, 3); got["anchor-quorum"] != classViolation {
		t.Fatalf("two witnesses, quorum 3: %v", got)
	}

	// the log's own key listed as a witness (the trust file names it
	// "self"): a log does not witness itself, its cosignature counts for
	// no quorum
	witnessSigners["self"] = logKey
	os.RemoveAll(events + ".tlog")
	write(anchorWith("w1", "self"))
	withSelf := []witness{ws[0], {Name: "self", Key: pubOf(t, logKey)}}
	if got := check(withSelf, 2); got["anchor-quorum"] != classViolation {
		t.Fatalf("the log's own cosignature met quorum 2: %v", got)
	}
	if got := check(withSelf, 1); got["anchor-quorum"] != "" || got["anchored"] != ClassNotice {
		t.Fatalf("w1 and the log's own cosignature, quorum 1: %v", got)
	}
	os.RemoveAll(events + ".tlog")
	write(anchorWith("w1", "w2"))

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
	if got := check(ws, 1); got["anchor-cosignature"] != classTampered {
		t.Fatalf("changed cosignature: %v", got)
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// forkLog creates a log of origin in dir under its own new key and
// anchors the end of events in it; it returns the log's key, the log
// (read like verify --log DIR reads it) and the bundle.
func forkLog(t *testing.T, dir, origin, events string) (string, bundle.Log, *bundle.Bundle) {
	t.Helper()
	ctx := context.Background()
	s := anchorSigner(t, filepath.Base(dir))
	cfg, err := tlog.Init(ctx, dir, tlog.Config{Origin: origin, Keyring: dir + ".json"}, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tlog.Open(ctx, tlog.Storage{Kind: "posix", Arg: dir}, tlog.Options{Origin: origin, Signer: s})
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
		t.Fatalf("anchor in %s: %v %v", dir, err, warn)
	}
	r, named, err := tlog.Reader(ctx, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if named != cfg.LogKey {
		t.Fatalf("the log folder names key %s, 'log init' made %s", named, cfg.LogKey)
	}
	return cfg.LogKey, r, b
}

// TestAnchorForkedLog (issue 30 item 6): a second log, made with its own
// key and holding an entry for the same session end (a fork, or any log
// an attacker runs), answers --log exactly as the real one does. Unpinned,
// the anchor is unauthenticated, never verified, whichever log it is; a
// log under another key than the one pinned for its origin (--log-key or
// the trust file's log_keys) is tampered; a log of an origin no pin names
// is unauthenticated. The bundle beside the events follows the same rule
// when anchoring is asked for, and is a notice when it is not.
func TestAnchorForkedLog(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(events)
	if err != nil {
		t.Fatal(err)
	}
	if err := synthlog.Generate(f, 12, 1, "fork1"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	realKey, realLog, realBundle := forkLog(t, filepath.Join(dir, "real"), "example.test/log", events)
	forkKey, fork, forkBundle := forkLog(t, filepath.Join(dir, "fork"), "example.test/log", events)
	otherKey, other, _ := forkLog(t, filepath.Join(dir, "other"), "example.test/other", events)
	if realKey == forkKey {
		t.Fatal("the fork has the real log's key")
	}
	check := func(o *AnchorOptions) map[string]Class {
		t.Helper()
		r := &Report{}
		if err := checkAnchoring(r, events, o); err != nil {
			t.Fatal(err)
		}
		return anchorCodes(r)
	}
	type tc struct {
		name string
		o    *AnchorOptions
		code string
		want Class
	}
	logCases := []tc{
		{"real log, unpinned", &AnchorOptions{Log: realLog, NamedKey: realKey}, "anchor-log-unpinned", classUnauthenticated},
		{"fork, unpinned", &AnchorOptions{Log: fork, NamedKey: forkKey}, "anchor-log-unpinned", classUnauthenticated},
		{"real log, --log-key", &AnchorOptions{Log: realLog, NamedKey: realKey, LogKey: realKey}, "anchor-latest", ClassNotice},
		{"real log, trust file", &AnchorOptions{Log: realLog, NamedKey: realKey, TrustedLogKeys: []string{otherKey, realKey}}, "anchor-latest", ClassNotice},
		{"fork, --log-key of the real log", &AnchorOptions{Log: fork, NamedKey: forkKey, LogKey: realKey}, "anchor-log-key", classTampered},
		{"fork, trust file pins the real log", &AnchorOptions{Log: fork, NamedKey: forkKey, TrustedLogKeys: []string{realKey}}, "anchor-log-key", classTampered},
		{"another origin, trust file pins the real log", &AnchorOptions{Log: other, NamedKey: otherKey, TrustedLogKeys: []string{realKey}}, "anchor-log-unpinned", classUnauthenticated},
		// a fork that names the real key but signs with its own: the
		// checkpoint does not verify under the pinned key
		{"fork naming the real key", &AnchorOptions{Log: fork, NamedKey: realKey, TrustedLogKeys: []string{realKey}}, "anchor-log-inconsistent", classTampered},
	}
	for _, c := range logCases {
		got := check(c.o)
		if got[c.code] != c.want {
			t.Errorf("%s: want %s %s, got %v", c.name, c.code, c.want, got)
		}
		if c.want != ClassNotice && got["anchor-latest"] != "" {
			t.Errorf("%s: the log was looked up although its key is not the pinned one: %v", c.name, got)
		}
	}

	// the bundle beside the events
	write := func(b *bundle.Bundle) {
		t.Helper()
		data, err := b.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := bundle.Path(events, b.Entry.Count)
		os.RemoveAll(filepath.Dir(p))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(forkBundle)
	bundleCases := []tc{
		{"fork's bundle, nothing asked", nil, "anchor-unpinned", ClassNotice},
		{"fork's bundle, --log-key of the real log", &AnchorOptions{LogKey: realKey}, "anchor-bundle-invalid", classTampered},
		{"fork's bundle, trust file pins the real log", &AnchorOptions{TrustedLogKeys: []string{realKey}}, "anchor-bundle-invalid", classTampered},
		{"fork's bundle, --log-quorum", &AnchorOptions{Quorum: 1}, "anchor-unpinned", classUnauthenticated},
		{"fork's bundle, real log pinned", &AnchorOptions{Log: realLog, NamedKey: realKey, LogKey: realKey}, "anchor-bundle-invalid", classTampered},
	}
	for _, c := range bundleCases {
		got := check(c.o)
		if got[c.code] != c.want || got["anchored"] != "" {
			t.Errorf("%s: want %s %s and no anchored, got %v", c.name, c.code, c.want, got)
		}
	}
	write(realBundle)
	for _, c := range []tc{
		{"real bundle, nothing asked", nil, "anchor-unpinned", ClassNotice},
		{"real bundle, trust file only", &AnchorOptions{TrustedLogKeys: []string{realKey}}, "anchored", ClassNotice},
		{"real bundle, --log-key", &AnchorOptions{LogKey: realKey}, "anchored", ClassNotice},
		{"real bundle, unpinned fork given", &AnchorOptions{Log: fork, NamedKey: forkKey}, "anchor-unpinned", classUnauthenticated},
	} {
		if got := check(c.o); got[c.code] != c.want {
			t.Errorf("%s: want %s %s, got %v", c.name, c.code, c.want, got)
		}
	}
}
