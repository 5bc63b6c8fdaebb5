package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Log is read access to a log (a folder or a served log; package tlog
// implements it over Tessera's tile client). Nothing it returns is
// trusted: checkpoints are verified with the log key, proofs and range
// nodes against signed roots, entries by hashing them into the tree. The
// interface keeps verify free of network code.
type Log interface {
	// ReadCheckpoint returns the log's latest signed checkpoint.
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	// ConsistencyProof returns the RFC 6962 consistency proof between the
	// trees of sizes smaller and larger.
	ConsistencyProof(ctx context.Context, smaller, larger uint64) ([][]byte, error)
	// RangeNodes returns the compact-range nodes of the entries [0, end)
	// in a tree of size size (compact.RangeNodes order).
	RangeNodes(ctx context.Context, end, size uint64) ([][]byte, error)
	// Entries returns the entries [from, to) of a tree of size size.
	Entries(ctx context.Context, from, to, size uint64) ([][]byte, error)
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

// scanChunk is how many entries are read at once.
const scanChunk = 4096

// LookupSession finds the latest entry of session in the log, reading the
// entries from index from to the size of the log's current checkpoint
// (verified with logKey). Every entry read is hashed into a compact range
// started from the nodes of [0, from), and the range's root must be the
// checkpoint's root: the log can neither hide an entry in the scanned part
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
		if err := consistent(ctx, log, known, cp); err != nil {
			return nil, err
		}
	}
	if from > cp.Size {
		return nil, fmt.Errorf("%w: entry %d is beyond the log's size %d", ErrInconsistent, from, cp.Size)
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	var nodes [][]byte
	if from > 0 {
		if nodes, err = log.RangeNodes(ctx, from, cp.Size); err != nil {
			return nil, fmt.Errorf("read the log's tiles: %w", err)
		}
	}
	r, err := rf.NewRange(0, from, nodes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	res := &Lookup{Checkpoint: cp}
	for i := from; i < cp.Size; {
		to := min(i+scanChunk, cp.Size)
		es, err := log.Entries(ctx, i, to, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("read the log's entries: %w", err)
		}
		if uint64(len(es)) != to-i {
			return nil, fmt.Errorf("%w: asked for %d entries from %d, got %d", ErrInconsistent, to-i, i, len(es))
		}
		for _, data := range es {
			if err := r.Append(leafHash(data), nil); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
			}
			res.Scanned++
			if e, err := ParseEntry(data, "entry"); err == nil && e.Session == session {
				res.Entries++
				res.Latest, res.LatestIndex = &e, i
			}
			i++
		}
	}
	if cp.Size > 0 {
		root, err := r.GetRootHash(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInconsistent, err)
		}
		if !bytes.Equal(root, cp.Root) {
			return nil, fmt.Errorf("%w: the entries from %d do not hash to the checkpoint's root", ErrInconsistent, from)
		}
	}
	return res, nil
}

// consistent checks that checkpoint b extends checkpoint a (same origin,
// size not smaller, consistency proof from the log).
func consistent(ctx context.Context, log Log, a, b *Checkpoint) error {
	if a.Origin != b.Origin {
		return fmt.Errorf("%w: origin %q, not %q", ErrInconsistent, b.Origin, a.Origin)
	}
	if b.Size < a.Size {
		return fmt.Errorf("%w: the log's tree has %d entries, fewer than the %d of a checkpoint it signed: it was rolled back", ErrInconsistent, b.Size, a.Size)
	}
	var p [][]byte
	if a.Size > 0 && a.Size < b.Size {
		var err error
		if p, err = log.ConsistencyProof(ctx, a.Size, b.Size); err != nil {
			return fmt.Errorf("read the log's tiles: %w", err)
		}
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, a.Size, b.Size, p, a.Root, b.Root); err != nil {
		return fmt.Errorf("%w: the checkpoint of size %d does not extend the one of size %d: %v", ErrInconsistent, b.Size, a.Size, err)
	}
	return nil
}
