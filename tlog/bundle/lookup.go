package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
)

// Log is read access to a tlog-tiles log: a folder (client.FileFetcher) or
// a URL (client.HTTPFetcher).
type Log interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// Lookup is what a log knows of one session.
type Lookup struct {
	Checkpoint  *Checkpoint // the log's checkpoint the scan was checked against
	Latest      *Entry      // the session's last entry in the log; nil when none
	LatestIndex uint64
	Entries     int    // how many entries of the session the scan met
	Scanned     uint64 // how many entries were read
}

// ErrInconsistent marks a log whose checkpoint is not a consistent
// extension of a checkpoint the verifier holds (a fork or a rolled-back
// log), or whose entries do not hash to its signed root.
var ErrInconsistent = errors.New("log is not consistent")

// LookupSession finds the latest entry of session in the log, reading the
// entries from index from to the size of the log's current checkpoint
// (verified with logKey). Every entry read is hashed into a compact range
// started from the tiles' nodes for [0, from), and the range's root must be
// the checkpoint's root: the log cannot hide an entry in the scanned part,
// nor show one it does not hold. When known is not nil (a bundle's
// checkpoint), the log's checkpoint must be a consistent extension of it.
func LookupSession(ctx context.Context, log Log, logKey, session string, from uint64, known *Checkpoint) (*Lookup, error) {
	raw, err := log.ReadCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the log's checkpoint: %w", err)
	}
	cp, err := OpenCheckpoint(raw, logKey)
	if err != nil {
		return nil, fmt.Errorf("the log's checkpoint: %w", err)
	}
	if known != nil {
		if err := Consistent(ctx, log, known, cp); err != nil {
			return nil, err
		}
	}
	if from > cp.Size {
		return nil, fmt.Errorf("%w: entry %d is beyond the log's size %d", ErrInconsistent, from, cp.Size)
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	nodes, err := client.FetchRangeNodes(ctx, from, log.ReadTile)
	if err != nil {
		return nil, fmt.Errorf("read the log's tiles: %w", err)
	}
	r, err := rf.NewRange(0, from, nodes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	res := &Lookup{Checkpoint: cp}
	for i := from; i < cp.Size; {
		b, err := client.GetEntryBundle(ctx, log.ReadEntryBundle, i/layout.EntryBundleWidth, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("read the log's entries: %w", err)
		}
		first := i / layout.EntryBundleWidth * layout.EntryBundleWidth
		for j := i - first; j < uint64(len(b.Entries)) && i < cp.Size; j, i = j+1, i+1 {
			data := b.Entries[j]
			if err := r.Append(LeafHash(data), nil); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
			}
			res.Scanned++
			e, err := ParseEntry(data, "entry")
			if err != nil || e.Session != session {
				continue
			}
			res.Entries++
			res.Latest, res.LatestIndex = &e, i
		}
		if i < cp.Size && uint64(len(b.Entries)) <= i-first {
			return nil, fmt.Errorf("%w: entry bundle %d holds %d entries, short of the checkpoint's size", ErrInconsistent, first/layout.EntryBundleWidth, len(b.Entries))
		}
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	if cp.Size > 0 && !bytes.Equal(root, cp.Root) {
		return nil, fmt.Errorf("%w: the entries from %d do not hash to the checkpoint's root", ErrInconsistent, from)
	}
	return res, nil
}

// Consistent checks that checkpoint b extends checkpoint a (same origin,
// size not smaller, consistency proof from the log's tiles).
func Consistent(ctx context.Context, log Log, a, b *Checkpoint) error {
	if a.Origin != b.Origin {
		return fmt.Errorf("%w: origin %q, not %q", ErrInconsistent, b.Origin, a.Origin)
	}
	if b.Size < a.Size {
		return fmt.Errorf("%w: the log's tree has %d entries, fewer than the %d of a checkpoint it signed: it was rolled back", ErrInconsistent, b.Size, a.Size)
	}
	pb, err := client.NewProofBuilder(ctx, b.Size, log.ReadTile)
	if err != nil {
		return fmt.Errorf("read the log's tiles: %w", err)
	}
	var p [][]byte
	if a.Size > 0 && a.Size < b.Size {
		if p, err = pb.ConsistencyProof(ctx, a.Size, b.Size); err != nil {
			return fmt.Errorf("read the log's tiles: %w", err)
		}
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, a.Size, b.Size, p, a.Root, b.Root); err != nil {
		return fmt.Errorf("%w: the checkpoint of size %d does not extend the one of size %d: %v", ErrInconsistent, b.Size, a.Size, err)
	}
	return nil
}
