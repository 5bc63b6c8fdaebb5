package graph

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
//
// Add and AddView only check the order and copy the node's terms into a
// batch; the lines are written, sorted, reordered and hashed on another
// goroutine, one batch at a time, while the caller goes on (at most one
// batch in flight, so memory stays at two batches). That goroutine ends
// with its batch: a digest left without Sum or Close holds no goroutine
// once its last batch is hashed. Sum waits for it; Close drops the digest.
type NQuadsDigest struct {
	prev   []byte // the last node's IRI (the caller's side)
	any    bool
	fill   *digestBatch      // the batch the caller fills
	spare  *digestBatch      // a hashed batch, for reuse
	flight chan *digestBatch // the batch being hashed comes back on it; nil: none
	core   digestCore        // touched only by the batch's goroutine, or once none is in flight
	done   bool              // after Sum or Close
	// a batch is handed over once it holds maxBytes of text or maxNodes
	// nodes (digestBatchBytes, digestBatchNodes; tests make them small)
	maxBytes, maxNodes int
}

// digestCore is the hashing side of NQuadsDigest: one node's compact
// lines, the reorder buffer and the hash.
type digestCore struct {
	h     hash.Hash
	bw    *hashBlocks
	re    nqReorder
	buf   []byte
	offs  []int
	lines [][]byte
	blk   []byte
	err   error // the first error of a batch
}

// digestBatch is a run of nodes copied for the hashing goroutine: per node
// its IRI, then its terms (the types first, as rdf:type values), their
// bytes one after another in text.
type digestBatch struct {
	text  []byte
	nodes []digestNode
	vals  []digestVal
}

// digestNode is one node of a digestBatch: its IRI ends at idEnd in text,
// its terms at vals in digestBatch.vals.
type digestNode struct{ idEnd, vals int32 }

// digestVal is one statement of a node: its predicate, its object (an IRI,
// or a literal's lexical form and datatype, "" for xsd:string), whose
// bytes end at end in digestBatch.text.
type digestVal struct {
	pred, dt string
	end      int32
	iri      bool
}

// A batch of NQuadsDigest is handed over once it holds digestBatchBytes of
// text or digestBatchNodes nodes.
const (
	digestBatchBytes = 256 << 10
	digestBatchNodes = 1024
)

var errDigestDone = errors.New("graph digest: no node after Sum or Close")

// NewNQuadsDigest returns an empty digest.
func NewNQuadsDigest() *NQuadsDigest {
	d := &NQuadsDigest{fill: &digestBatch{}, maxBytes: digestBatchBytes, maxNodes: digestBatchNodes}
	d.core.h = sha256.New()
	d.core.bw = &hashBlocks{w: bufio.NewWriterSize(d.core.h, 64<<10)}
	d.core.re.w = d.core.bw
	return d
}

// Add adds the quads of n. Its ID must follow the previous node's in byte
// order (no duplicates): WriteNQuads' order is derived from that one. An
// error of the hashing of earlier nodes may come from Add, else from Sum.
func (d *NQuadsDigest) Add(n *Node) error {
	if err := next(d, n.ID); err != nil {
		return err
	}
	b := d.fill
	for _, t := range n.Types {
		b.text = append(b.text, t...)
		b.vals = append(b.vals, digestVal{pred: RDFType, end: int32(len(b.text)), iri: true})
	}
	for p, vals := range n.Props {
		for _, v := range vals {
			dv := digestVal{pred: p, iri: v.IRI != ""}
			if dv.iri {
				b.text = append(b.text, v.IRI...)
			} else {
				b.text = append(b.text, v.Lex...)
				if dt := v.datatype(); dt != xsdString {
					dv.dt = dt
				}
			}
			dv.end = int32(len(b.text))
			b.vals = append(b.vals, dv)
		}
	}
	return d.endNode()
}

// AddView is Add of the node a view of ScanJSONLDView stands for: the
// same lines, without building the *Node.
func (d *NQuadsDigest) AddView(v *NodeView) error {
	if err := next(d, v.ID); err != nil {
		return err
	}
	b := d.fill
	for _, t := range v.Types {
		b.text = append(b.text, t...)
		b.vals = append(b.vals, digestVal{pred: RDFType, end: int32(len(b.text)), iri: true})
	}
	for _, p := range v.Props {
		for _, t := range p.Vals {
			dv := digestVal{pred: p.Pred, iri: len(t.IRI) > 0}
			if dv.iri {
				b.text = append(b.text, t.IRI...)
			} else {
				b.text = append(b.text, t.Lex...)
				if dt := t.Datatype; dt != xsdString {
					dv.dt = dt
				}
			}
			dv.end = int32(len(b.text))
			b.vals = append(b.vals, dv)
		}
	}
	return d.endNode()
}

// next checks that id follows the previous node's IRI, keeps it, and
// starts the node's record in the batch.
func next[S string | []byte](d *NQuadsDigest, id S) error {
	if d.done {
		return errDigestDone
	}
	if d.any && string(id) <= string(d.prev) {
		return fmt.Errorf("node %s: not after %s in IRI order", id, d.prev)
	}
	d.any, d.prev = true, append(d.prev[:0], id...)
	b := d.fill
	b.text = append(b.text, id...)
	b.nodes = append(b.nodes, digestNode{idEnd: int32(len(b.text))})
	return nil
}

// endNode ends the node's record and hands the batch over when it is full.
func (d *NQuadsDigest) endNode() error {
	b := d.fill
	b.nodes[len(b.nodes)-1].vals = int32(len(b.vals))
	if len(b.text) < d.maxBytes && len(b.nodes) < d.maxNodes {
		return nil
	}
	if err := d.wait(); err != nil {
		return err
	}
	d.flight = make(chan *digestBatch, 1)
	go func(b *digestBatch, c *digestCore, back chan<- *digestBatch) {
		c.batch(b)
		back <- b
	}(b, &d.core, d.flight)
	d.fill, d.spare = d.spare, nil
	if d.fill == nil {
		d.fill = &digestBatch{}
	}
	d.fill.text, d.fill.nodes, d.fill.vals = d.fill.text[:0], d.fill.nodes[:0], d.fill.vals[:0]
	return nil
}

// wait waits for the batch in flight, if any, and returns the hashing's
// first error.
func (d *NQuadsDigest) wait() error {
	if d.flight != nil {
		d.spare = <-d.flight
		d.flight = nil
	}
	return d.core.err
}

// batch writes the lines of b's nodes, in order, to the reorder buffer.
func (c *digestCore) batch(b *digestBatch) {
	at, v := 0, 0
	for _, n := range b.nodes {
		if c.err != nil {
			return
		}
		id := b.text[at:n.idEnd]
		at = int(n.idEnd)
		c.buf, c.offs = c.buf[:0], c.offs[:0]
		for ; v < int(n.vals); v++ {
			dv := &b.vals[v]
			c.offs = append(c.offs, len(c.buf))
			c.buf = appendDigestLine(c.buf, dv, b.text[at:dv.end])
			at = int(dv.end)
		}
		c.err = c.block(id)
	}
}

// appendDigestLine is appendLine of a copied term: o is its IRI or its
// lexical form.
func appendDigestLine(b []byte, v *digestVal, o []byte) []byte {
	n := len(b)
	b = streamPreds.appendCoded(b, predBase, v.pred)
	if v.iri {
		return appendIRIObject(b, b[n], o)
	}
	b = append(b, '"')
	b = appendEscaped(b, o)
	b = append(b, '"')
	if v.dt != "" {
		b = streamTypes.appendCoded(b, typeBase, v.dt)
	}
	return append(b, '\n')
}

// block sorts the node's compact lines in c.buf (cut at c.offs) and hands
// them to the reorder buffer as one block under the key "<id>".
func (c *digestCore) block(id []byte) error {
	c.lines = c.lines[:0]
	for k, off := range c.offs {
		end := len(c.buf)
		if k+1 < len(c.offs) {
			end = c.offs[k+1]
		}
		c.lines = append(c.lines, c.buf[off:end])
	}
	if len(c.lines) == 0 {
		return nil // a node without statements has no lines
	}
	slices.SortFunc(c.lines, bytes.Compare)
	c.lines = slices.CompactFunc(c.lines, bytes.Equal)
	// a block: the "<subject>" key, then its compact lines (whose byte
	// order is that of the N-Quads lines they stand for)
	c.blk = append(append(append(c.blk[:0], '<'), id...), '>')
	for _, l := range c.lines {
		c.blk = append(c.blk, l...)
	}
	_, _, err := c.re.push(nil, c.blk)
	return err
}

// Sum hashes the nodes left, writes the held lines and returns the
// digest, lower-case hex. The digest takes no more nodes after it, and
// holds no goroutine.
func (d *NQuadsDigest) Sum() (string, error) {
	if d.done {
		return "", errDigestDone
	}
	d.done = true
	if err := d.wait(); err != nil {
		return "", err
	}
	c := &d.core
	c.batch(d.fill)
	d.fill, d.spare = nil, nil
	if c.err != nil {
		return "", c.err
	}
	if _, err := c.re.finish(); err != nil {
		return "", err
	}
	if err := c.bw.w.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(c.h.Sum(nil)), nil
}

// Close abandons the digest: it waits for the batch being hashed, if any,
// and drops what it holds. The digest takes no more nodes after it; Close
// after Sum, or twice, does nothing.
func (d *NQuadsDigest) Close() error {
	if d.done {
		return nil
	}
	d.done = true
	d.wait()
	d.fill, d.spare = nil, nil
	d.core = digestCore{err: errDigestDone}
	return nil
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
