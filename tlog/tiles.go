package tlog

import (
	"context"
	"fmt"

	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"

	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// tileReader is what Tessera's readers and fetchers offer: the tlog-tiles
// resources of a log.
type tileReader interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// tiles is bundle.Log over tlog-tiles, with Tessera's client building
// proofs and range nodes. bundle verifies everything it returns.
type tiles struct{ r tileReader }

// newTiles returns bundle.Log over a tlog-tiles reader.
func newTiles(r tileReader) bundle.Log { return tiles{r} }

func (t tiles) ReadCheckpoint(ctx context.Context) ([]byte, error) { return t.r.ReadCheckpoint(ctx) }

func (t tiles) ConsistencyProof(ctx context.Context, smaller, larger uint64) ([][]byte, error) {
	pb, err := client.NewProofBuilder(ctx, larger, t.r.ReadTile)
	if err != nil {
		return nil, err
	}
	return pb.ConsistencyProof(ctx, smaller, larger)
}

func (t tiles) RangeNodes(ctx context.Context, end, size uint64) ([][]byte, error) {
	return client.FetchRangeNodes(ctx, end, t.r.ReadTile)
}

func (t tiles) Entries(ctx context.Context, from, to, size uint64) ([][]byte, error) {
	var out [][]byte
	for i := from; i < to; {
		b, err := client.GetEntryBundle(ctx, t.r.ReadEntryBundle, i/layout.EntryBundleWidth, size)
		if err != nil {
			return nil, err
		}
		first := i / layout.EntryBundleWidth * layout.EntryBundleWidth
		j := i - first
		if j >= uint64(len(b.Entries)) {
			return nil, fmt.Errorf("entry bundle %d holds %d entries, not %d", first/layout.EntryBundleWidth, len(b.Entries), j+1)
		}
		for ; j < uint64(len(b.Entries)) && i < to; j, i = j+1, i+1 {
			out = append(out, b.Entries[j])
		}
	}
	return out, nil
}
