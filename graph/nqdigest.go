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
	prev  []byte
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
	if err := next(d, n.ID); err != nil {
		return err
	}
	d.buf, d.offs = d.buf[:0], d.offs[:0]
	for _, t := range n.Types {
		d.offs = append(d.offs, len(d.buf))
		d.buf = appendLine(d.buf, RDFType, Ref(t))
	}
	for p, vals := range n.Props {
		for _, v := range vals {
			d.offs = append(d.offs, len(d.buf))
			d.buf = appendLine(d.buf, p, v)
		}
	}
	return d.block()
}

// AddView is Add of the node a view of ScanJSONLDView stands for: the
// same lines, without building the *Node.
func (d *NQuadsDigest) AddView(v *NodeView) error {
	if err := next(d, v.ID); err != nil {
		return err
	}
	d.buf, d.offs = d.buf[:0], d.offs[:0]
	for _, t := range v.Types {
		d.offs = append(d.offs, len(d.buf))
		d.buf = appendLine(d.buf, RDFType, Ref(t))
	}
	for _, p := range v.Props {
		for _, t := range p.Vals {
			d.offs = append(d.offs, len(d.buf))
			d.buf = appendLineView(d.buf, p.Pred, t)
		}
	}
	return d.block()
}

// next checks that id follows the previous node's IRI, and keeps it.
func next[S string | []byte](d *NQuadsDigest, id S) error {
	if d.any && string(id) <= string(d.prev) {
		return fmt.Errorf("node %s: not after %s in IRI order", id, d.prev)
	}
	d.any, d.prev = true, append(d.prev[:0], id...)
	return nil
}

// block sorts the node's compact lines in d.buf (cut at d.offs) and hands
// them to the reorder buffer as one block.
func (d *NQuadsDigest) block() error {
	d.lines = d.lines[:0]
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
	d.blk = append(append(append(d.blk[:0], '<'), d.prev...), '>')
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

// appendLineView is appendLine of a view's value.
func appendLineView(b []byte, p string, o TermView) []byte {
	b = streamPreds.appendCoded(b, predBase, p)
	if len(o.IRI) > 0 {
		b = append(b, '<')
		b = append(b, o.IRI...)
		return append(b, '>', '\n')
	}
	b = append(b, '"')
	b = appendEscaped(b, o.Lex)
	b = append(b, '"')
	if dt := o.Datatype; dt != XSDString && dt != "" {
		b = streamTypes.appendCoded(b, typeBase, dt)
	}
	return append(b, '\n')
}
