package tlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/transparency-dev/tessera/api/layout"

	"github.com/agent-trace-witness/witness/internal/httpbound"
)

// The bounds of each resource read (the client's own is MaxAnswer): a
// checkpoint is a signed note of a few lines and its cosignatures, a tile
// 256 hashes of 32 bytes.
const (
	maxCheckpoint = 1 << 20
	maxTile       = layout.TileWidth * 32
)

// httpTiles reads the tlog-tiles resources of a log served at root (a URL
// ending in "/") with hc, whose every answer is bounded in size and time;
// its errors name the URL, and a 404 is os.ErrNotExist.
type httpTiles struct {
	root string
	hc   *http.Client
}

func (h httpTiles) get(ctx context.Context, p string, limit int64) ([]byte, error) {
	u := h.root + p
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, httpbound.Unwrap(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u, os.ErrNotExist)
	default:
		return nil, fmt.Errorf("GET %s: the log answered %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, &httpbound.LimitError{Method: http.MethodGet, URL: u, Part: "body", Limit: limit}
	}
	return b, err
}

// ReadCheckpoint reads the log's checkpoint.
func (h httpTiles) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return h.get(ctx, layout.CheckpointPath, maxCheckpoint)
}

// ReadTile reads a tile; a partial one the log no longer has may have
// been completed, so a 404 for it falls back to the full tile.
func (h httpTiles) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) { return h.get(ctx, layout.TilePath(level, index, p), maxTile) })
}

// ReadEntryBundle reads an entry bundle, with ReadTile's fallback.
func (h httpTiles) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) { return h.get(ctx, layout.EntriesPath(index, p), maxAnswer) })
}

func partialOrFull(p uint8, get func(uint8) ([]byte, error)) ([]byte, error) {
	b, err := get(p)
	if p > 0 && errors.Is(err, os.ErrNotExist) {
		return get(0)
	}
	return b, err
}
