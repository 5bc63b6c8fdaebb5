package graph

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
)

// NQuadsDigest computes the graph digest (WriteNQuads' sha256 of the
// canonical N-Quads) of a graph given one node at a time, in strictly
// increasing ID order, the order of a canonical document's @graph (what
// ScanJSONLD gives). The N-Quads come in "<subject>" order instead; the two
// orders differ only where an IRI is a prefix of the next, which nqReorder
// holds back (a chain of prefixes, so memory stays at a few nodes' lines).
type NQuadsDigest struct {
	h     hash.Hash
	bw    *hashBlocks
	re    nqReorder
	prev  string
	any   bool
	buf   []byte
	offs  []int
	lines [][]byte
	blk   []byte
}

// NewNQuadsDigest returns an empty digest.
func NewNQuadsDigest() *NQuadsDigest {
	d := &NQuadsDigest{h: sha256.New()}
	d.bw = &hashBlocks{w: bufio.NewWriterSize(d.h, 64<<10)}
	d.re.w = d.bw
	return d
}

// Add adds the quads of n. Its ID must follow the previous node's in byte
// order (no duplicates): WriteNQuads' order is derived from that one.
func (d *NQuadsDigest) Add(n *Node) error {
	if d.any && n.ID <= d.prev {
		return fmt.Errorf("node %s: not after %s in IRI order", n.ID, d.prev)
	}
	d.any, d.prev = true, n.ID
	d.buf, d.offs, d.lines = d.buf[:0], d.offs[:0], d.lines[:0]
	add := func(p string, o Term) {
		d.offs = append(d.offs, len(d.buf))
		d.buf = appendLine(d.buf, p, o)
	}
	for _, t := range n.Types {
		add(RDFType, Ref(t))
	}
	for p, vals := range n.Props {
		for _, v := range vals {
			add(p, v)
		}
	}
	for k, off := range d.offs {
		end := len(d.buf)
		if k+1 < len(d.offs) {
			end = d.offs[k+1]
		}
		d.lines = append(d.lines, d.buf[off:end])
	}
	if len(d.lines) == 0 {
		return nil // a node without statements has no lines
	}
	slices.SortFunc(d.lines, bytes.Compare)
	d.lines = slices.CompactFunc(d.lines, bytes.Equal)
	// a block: the "<subject>" key, then its compact lines (whose byte
	// order is that of the N-Quads lines they stand for)
	d.blk = append(append(append(d.blk[:0], '<'), n.ID...), '>')
	for _, l := range d.lines {
		d.blk = append(d.blk, l...)
	}
	_, _, err := d.re.push(nil, d.blk)
	return err
}

// Sum writes the held lines and returns the digest, lower-case hex. The
// digest takes no more nodes after it.
func (d *NQuadsDigest) Sum() (string, error) {
	if _, err := d.re.finish(); err != nil {
		return "", err
	}
	if err := d.bw.w.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(d.h.Sum(nil)), nil
}

// hashBlocks is the blockWriter of NQuadsDigest: each block's N-Quads
// lines, written in order to w.
type hashBlocks struct {
	w   *bufio.Writer
	buf []byte
}

func (h *hashBlocks) block(pre, blk []byte) (int64, error) {
	var n int64
	var err error
	h.buf, n, err = appendNQuadsBlock(h.buf[:0], pre, blk)
	if err != nil {
		return n, err
	}
	_, err = h.w.Write(h.buf)
	return n, err
}
