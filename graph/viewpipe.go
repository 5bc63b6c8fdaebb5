package graph

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// viewPipe hands the blocks of StreamViews to fn on a goroutine of its
// own, in order, in batches: the merge that yields them (the heap of runs
// and the N-Quads reorder, for the digest) and the view and fn (the
// caller's projection, replay's index: the larger share) then run side by
// side instead of one after the other on the merge's goroutine
// (docs/design/scale.md, "The report's merge on two goroutines"). fn is
// called on one goroutine at a time, in the blocks' order, as before; an
// error of the view or of fn stops the stream at the producer's next
// block, and no call follows it.
type viewPipe struct {
	fn     func(*NodeView) error
	work   chan *viewBlocks
	free   chan *viewBlocks
	done   chan struct{}
	failed atomic.Bool
	err    error // the consumer's first error; read after done
	cur    *viewBlocks
}

// viewBlocks is a batch of blocks, copied end to end.
type viewBlocks struct {
	buf  []byte
	ends []int
}

// Sizes of a batch, and the batches in flight: enough to keep both
// goroutines busy through a node of many quads, small enough to stay in
// the cache.
const (
	pipeBlocks  = 256
	pipeBytes   = 1 << 20
	pipeBatches = 4
)

// newViewPipe starts the consumer of fn.
func newViewPipe(fn func(*NodeView) error) *viewPipe {
	p := &viewPipe{fn: fn, work: make(chan *viewBlocks, pipeBatches), free: make(chan *viewBlocks, pipeBatches+1), done: make(chan struct{})}
	for range pipeBatches + 1 {
		p.free <- &viewBlocks{}
	}
	go p.consume()
	return p
}

// consume views each block and calls fn, until the first error; then it
// only drains.
func (p *viewPipe) consume() {
	defer close(p.done)
	var jn jsonldNode
	var view NodeView
	for b := range p.work {
		start := 0
		for _, end := range b.ends {
			if p.err != nil {
				break
			}
			blk := b.buf[start:end]
			start = end
			if err := jn.view(&view, blk); err != nil {
				p.err = fmt.Errorf("node view: node %s: %w", lineKey(blk), err)
			} else if err := p.fn(&view); err != nil {
				p.err = err
			}
			if p.err != nil {
				p.failed.Store(true)
			}
		}
		b.buf, b.ends = b.buf[:0], b.ends[:0]
		p.free <- b
	}
}

// push copies blk (valid only during the call) into the current batch,
// and hands the batch on when full. It returns errPipeStopped once the
// consumer has failed: the caller stops, and close returns the error.
func (p *viewPipe) push(blk []byte) error {
	if p.failed.Load() {
		return errPipeStopped
	}
	if p.cur == nil {
		p.cur = <-p.free
	}
	p.cur.buf = append(p.cur.buf, blk...)
	p.cur.ends = append(p.cur.ends, len(p.cur.buf))
	if len(p.cur.ends) >= pipeBlocks || len(p.cur.buf) >= pipeBytes {
		p.work <- p.cur
		p.cur = nil
	}
	return nil
}

// errPipeStopped stops the producer of a pipe whose consumer failed.
var errPipeStopped = errors.New("graph: view consumer stopped")

// close hands on the last batch (unless the stream failed: flush false),
// waits until fn has seen every block handed on, and returns the
// consumer's error.
func (p *viewPipe) close(flush bool) error {
	if flush && p.cur != nil && len(p.cur.ends) > 0 {
		p.work <- p.cur
	}
	p.cur = nil
	close(p.work)
	<-p.done
	return p.err
}
