package bundle

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// format is the format string of a bundle file.
const format = "witness-tlog-bundle/v1"

// Bundle is what is written beside the events when a session end or
// checkpoint is anchored: the entry, where the log put it, the proof that
// it is in the tree, and the signed checkpoint of that tree (with the
// cosignatures gathered when it was written).
type Bundle struct {
	LogKey     string   // the log's signed-note verifier key; its name is the log's origin
	Entry      Entry    // the entry as the log holds it
	Index      uint64   // the entry's index in the log
	Proof      [][]byte // RFC 6962 inclusion proof of Index in the checkpoint's tree
	Checkpoint []byte   // the signed checkpoint, cosignatures included
}

// Path is where the bundle of the end with count lines is written beside
// the events: "<events>.tlog/<count>.json". One file per anchored end, so
// a checkpoint never overwrites an earlier bundle.
func Path(events string, count int64) string {
	return filepath.Join(events+".tlog", strconv.FormatInt(count, 10)+".json")
}

// Find returns the bundle paths beside events, by count ascending.
func Find(events string) ([]string, error) {
	des, err := os.ReadDir(events + ".tlog")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read bundles: %w", err), "")
	}
	type named struct {
		n    int64
		path string
	}
	var ns []named
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), ".json")
		n, err := strconv.ParseInt(base, 10, 64)
		if !ok || err != nil || strconv.FormatInt(n, 10) != base {
			continue
		}
		ns = append(ns, named{n, filepath.Join(events+".tlog", de.Name())})
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].n < ns[j].n })
	out := make([]string, len(ns))
	for i, x := range ns {
		out[i] = x.path
	}
	return out, nil
}

// Marshal returns the bundle's canonical JSON.
func (b *Bundle) Marshal() ([]byte, error) {
	entry, err := b.Entry.Marshal()
	if err != nil {
		return nil, err
	}
	p := make([]string, len(b.Proof))
	for i, h := range b.Proof {
		p[i] = base64.StdEncoding.EncodeToString(h)
	}
	return canon.Marshal(map[string]any{
		"format":     format,
		"log_key":    b.LogKey,
		"entry":      json.RawMessage(entry),
		"index":      b.Index,
		"proof":      p,
		"checkpoint": string(b.Checkpoint),
	})
}

// Parse reads a bundle file's content (named name in errors). Errors are
// tampered (exit 3): a bundle is evidence.
func Parse(data []byte, name string) (*Bundle, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("bundle %w", err), "restore the bundle written when the session was anchored, or verify against the log with --log")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
	}
	var perr error
	top := jsontree.NewObjectReader(name, "", root, &perr)
	if f := top.String("format", true); perr == nil && f != format {
		top.Fail("format", fmt.Sprintf("want %q, got %q", format, f))
	}
	b := &Bundle{LogKey: top.String("log_key", true)}
	idx := top.Int("index", true)
	if perr == nil && idx < 0 {
		top.Fail("index", "must not be negative")
	}
	b.Index = uint64(idx)
	for i, s := range top.Strings("proof", true) {
		h, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(h) != 32 {
			top.Fail("proof", fmt.Sprintf("hash %d is not 32 bytes of base64", i))
			break
		}
		b.Proof = append(b.Proof, h)
	}
	b.Checkpoint = []byte(top.String("checkpoint", true))
	if er := top.Object("entry", true); er != nil {
		b.Entry, _ = readEntry(er, &perr)
	}
	top.Done()
	if perr != nil {
		return nil, bad(perr)
	}
	return b, nil
}

// ReadFile reads and parses a bundle file.
func ReadFile(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read bundle", err, "check the bundle beside the events")
	}
	return Parse(data, path)
}

// leafHash is the RFC 6962 leaf hash of an entry's canonical JSON.
func leafHash(entry []byte) []byte { return rfc6962.DefaultHasher.HashLeaf(entry) }

// ErrInclusion marks an inclusion proof that does not lead to the
// checkpoint's root.
var ErrInclusion = errors.New("inclusion proof does not verify")

// Verify checks the bundle offline: the checkpoint's log signature (under
// the bundle's log key, or logKey when given: pin it), and the inclusion
// proof of the entry in the checkpoint's tree. It returns the checkpoint.
func (b *Bundle) Verify(logKey string) (*Checkpoint, error) {
	key := b.LogKey
	if logKey != "" {
		if logKey != b.LogKey {
			return nil, fmt.Errorf("%w: the bundle names log key %q, not the pinned %q", ErrCheckpoint, b.LogKey, logKey)
		}
		key = logKey
	}
	c, err := OpenCheckpoint(b.Checkpoint, key)
	if err != nil {
		return nil, err
	}
	entry, err := b.Entry.Marshal()
	if err != nil {
		return nil, err
	}
	if b.Index >= c.Size {
		return nil, fmt.Errorf("%w: index %d is outside the checkpoint's tree of size %d", ErrInclusion, b.Index, c.Size)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, b.Index, c.Size, leafHash(entry), b.Proof, c.Root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInclusion, err)
	}
	return c, nil
}
