package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
)

// canonHead is how every document WriteJSONLD writes begins.
var canonHead = []byte(`{"@context":` + ContextJSON + `,"@graph":[`)

// errNotStreamed is returned by readStream when the document does not
// begin with canonHead: it is read whole instead.
var errNotStreamed = errors.New("not a streamed document")

// graphReader reads a graph document that begins with canonHead node by
// node: each @graph element is cut out of the stream (a byte scanner that
// knows strings and nesting), checked and decoded on its own, so memory
// holds one element's text and the graph, never the document or its tree.
// Each element gets the checks the whole-document reader gives it: valid
// JSON without duplicate keys (canon.Transform), then parseNode; a
// canonical element takes canonNodeParser's shortcut to the same node (in
// the parse workers of scanViewsIn, which every streamed read goes
// through).
type graphReader struct {
	br    *bufio.Reader
	limit jsonlimit.Checker
	elem  []byte
	off   int64 // bytes consumed
}

// readStream reads the document from br, which must begin with canonHead
// (else errNotStreamed, nothing consumed).
func readStream(br *bufio.Reader) (*Graph, error) {
	g := New()
	err := scanStream(br, func(i int, n *Node) error {
		if g.index[n.ID] != nil {
			return nodeError(i, " ("+n.ID+")", atPath(jsonpath.Member("", "@id"), errors.New("duplicate node")))
		}
		g.index[n.ID] = n
		g.Nodes = append(g.Nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(g.Nodes, func(a, b *Node) int { return cmpID(a.ID, b.ID) }) {
		sortNodes(g.Nodes)
	}
	return g, nil
}

// scanStream reads the document from br, which must begin with canonHead
// (else errNotStreamed, nothing consumed), and gives each node to fn with
// its index in @graph, in document order. An error of fn ends the scan and
// is returned as is.
func scanStream(br *bufio.Reader, fn func(i int, n *Node) error) error {
	return scanViewsIn(br, func(i int, v *NodeView) error {
		return fn(i, v.asNode())
	}, viewBatchNodes)
}

// scanViewsIn is scanStream giving each node as a view (valid during the
// call only): a canonical element is read without a *Node. The work runs
// as a pipeline on the machine's cores, with the same result as one loop:
// one goroutine cuts the elements out of the stream (scanElements) in
// batches, parseWorkers goroutines parse batches (canonNodeParser), and
// the caller's goroutine takes the batches in document order, reads the
// elements the parsers left the general way and calls fn. An error of the
// scan comes after the elements before it, as in one loop; an error of fn
// or of an element stops the pipeline. At most viewBatches batches are in
// flight, so memory stays bounded. A batch holds at most batchNodes elements.
func scanViewsIn(br *bufio.Reader, fn func(i int, v *NodeView) error, batchNodes int) error {
	head, err := br.Peek(len(canonHead))
	if err != nil || !bytes.Equal(head, canonHead) {
		return errNotStreamed
	}
	free := make(chan *viewBatch, viewBatches)
	for range viewBatches {
		free <- &viewBatch{}
	}
	toParse := make(chan *viewBatch, viewBatches)
	inOrder := make(chan *viewBatch, viewBatches)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1 + parseWorkers)
	defer func() {
		close(done)
		wg.Wait()
	}()
	go func() {
		defer wg.Done()
		defer close(toParse)
		defer close(inOrder)
		var b *viewBatch
		take := func() bool {
			select {
			case b = <-free:
				b.reset()
				return true
			case <-done:
				return false
			}
		}
		send := func() {
			toParse <- b
			inOrder <- b
			b = nil
		}
		if !take() {
			return
		}
		err := scanElements(br, func(gr *graphReader, i int) error {
			if b == nil && !take() {
				return errStopped
			}
			if len(b.ends) == 0 {
				b.first = i
			}
			b.text = append(b.text, gr.elem...)
			b.ends = append(b.ends, len(b.text))
			b.offs = append(b.offs, gr.off-int64(len(gr.elem)))
			if len(b.text) >= viewBatchBytes || len(b.ends) >= batchNodes {
				send()
			}
			return nil
		})
		if err == errStopped {
			return
		}
		if b == nil && !take() {
			return
		}
		b.err, b.last = err, true
		send()
	}()
	for range parseWorkers {
		go func() {
			defer wg.Done()
			p := canonNodeParser{intern: map[string]string{}}
			for b := range toParse {
				b.parse(&p)
				close(b.ready)
			}
		}()
	}
	var v NodeView
	for b := range inOrder {
		<-b.ready
		start := 0
		for k, end := range b.ends {
			i := b.first + k
			if b.ok[k] {
				b.views[k].off, b.views[k].n = b.offs[k], int64(end-start)
				if err := fn(i, &b.views[k]); err != nil {
					return err
				}
			} else {
				n, err := generalNode(b.text[start:end], i)
				if err != nil {
					return err
				}
				viewOf(&v, n)
				v.off, v.n = b.offs[k], int64(end-start)
				if err := fn(i, &v); err != nil {
					return err
				}
			}
			start = end
		}
		if b.last {
			return b.err
		}
		free <- b
	}
	return nil
}

// The pipeline of scanViews: parse workers, batches in flight, and the
// size of a batch (whichever limit comes first).
const (
	parseWorkers   = 2
	viewBatches    = 8
	viewBatchBytes = 256 << 10
	viewBatchNodes = 1024
)

// errStopped ends the cutting goroutine of scanViews when the caller has
// stopped.
var errStopped = errors.New("scan stopped")

// viewBatch is a run of consecutive @graph elements: their text, cut by
// scanElements, and their views, parsed by a worker. Its views point into
// its own buffers, which stay untouched until the batch is reused.
type viewBatch struct {
	first int     // index in @graph of the first element
	text  []byte  // the elements, one after another
	ends  []int   // end of each element in text
	offs  []int64 // offset of each element in the stream
	err   error   // with last: the scan's end (nil, or its error)
	last  bool
	ready chan struct{} // closed once parsed
	ok    []bool        // element k parsed by the shortcut into views[k]
	views []NodeView
	types []string
	props []PropView
	vals  []TermView
	unesc []byte
}

func (b *viewBatch) reset() {
	b.first, b.err, b.last = 0, nil, false
	b.text, b.ends, b.offs = b.text[:0], b.ends[:0], b.offs[:0]
	b.ready = make(chan struct{})
}

// parse reads the batch's elements with p's shortcut, each view copied
// into the batch (its strings stay in the batch's text or unesc).
func (b *viewBatch) parse(p *canonNodeParser) {
	b.ok, b.views = b.ok[:0], b.views[:0]
	b.types, b.props, b.vals = b.types[:0], b.props[:0], b.vals[:0]
	need := len(b.text)
	if cap(b.unesc) < need {
		b.unesc = make([]byte, 0, need+need/4)
	}
	p.unesc = b.unesc[:0]
	p.keep = true
	start := 0
	for _, end := range b.ends {
		v, ok := p.parseView(b.text[start:end])
		start = end
		b.ok = append(b.ok, ok)
		if !ok {
			b.views = append(b.views, NodeView{})
			continue
		}
		nv := NodeView{ID: v.ID}
		t0 := len(b.types)
		b.types = append(b.types, v.Types...)
		nv.Types = b.types[t0:len(b.types):len(b.types)]
		p0 := len(b.props)
		for _, pv := range v.Props {
			v0 := len(b.vals)
			b.vals = append(b.vals, pv.Vals...)
			b.props = append(b.props, PropView{Pred: pv.Pred, Vals: b.vals[v0:len(b.vals):len(b.vals)]})
		}
		nv.Props = b.props[p0:len(b.props):len(b.props)]
		b.views = append(b.views, nv)
	}
	b.unesc = p.unesc
	p.keep = false
	p.unesc = nil
}

// scanElements cuts the @graph elements of the document out of br, which
// must begin with canonHead (else errNotStreamed, nothing consumed), and
// gives each, in gr.elem, to each with its index. An error of each ends
// the scan and is returned as is.
func scanElements(br *bufio.Reader, each func(gr *graphReader, i int) error) error {
	head, err := br.Peek(len(canonHead))
	if err != nil || !bytes.Equal(head, canonHead) {
		return errNotStreamed
	}
	gr := &graphReader{br: br}
	if _, err := gr.take(len(canonHead)); err != nil {
		return err
	}
	for i := 0; ; i++ {
		c, err := gr.skipSpace()
		if err != nil {
			return gr.syntax(err)
		}
		if c == ']' && i == 0 {
			gr.take(1)
			break
		}
		if err := gr.element(); err != nil {
			return err
		}
		if err := each(gr, i); err != nil {
			return err
		}
		c, err = gr.skipSpace()
		if err != nil {
			return gr.syntax(err)
		}
		if _, err := gr.take(1); err != nil {
			return err
		}
		if c == ']' {
			break
		}
		if c != ',' {
			return gr.syntax(syntaxError(fmt.Sprintf("invalid character %q after a @graph element", c)))
		}
	}
	c, err := gr.skipSpace()
	if err != nil || c != '}' {
		if err == nil {
			err = syntaxError(`expected "}" after @graph`)
		}
		return gr.syntax(err)
	}
	gr.take(1)
	if c, err := gr.skipSpace(); err != io.EOF {
		if err == nil {
			err = syntaxError(fmt.Sprintf("invalid character %q after top-level value", c))
		}
		return gr.syntax(err)
	}
	return nil
}

func cmpID(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// syntax is a JSON syntax error at the current offset; an error of the
// underlying reader (other than its end) is a readFailure instead.
func (gr *graphReader) syntax(err error) error {
	var se syntaxError
	switch {
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	case errors.As(err, &se):
	default:
		return &readFailure{err}
	}
	return fmt.Errorf("not valid JSON: offset %d: %w", gr.off, err)
}

// syntaxError is a JSON syntax error found by graphReader itself.
type syntaxError string

func (e syntaxError) Error() string { return string(e) }

// readFailure is an error of the reader under a graph document: not
// evidence of anything (exit code Failure).
type readFailure struct{ err error }

func (e *readFailure) Error() string { return e.err.Error() }

// take consumes n bytes (already peeked or read), feeding the nesting
// limit.
func (gr *graphReader) take(n int) ([]byte, error) {
	b, err := gr.br.Peek(n)
	if err != nil {
		return nil, gr.syntax(err)
	}
	if err := gr.limit.Write(b); err != nil {
		return nil, err
	}
	gr.br.Discard(n)
	gr.off += int64(n)
	return b, nil
}

// skipSpace consumes JSON white space and returns the next byte, unread.
func (gr *graphReader) skipSpace() (byte, error) {
	for {
		b, err := gr.br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\n', '\r':
			if _, err := gr.take(1); err != nil {
				return 0, err
			}
		default:
			return b[0], nil
		}
	}
}

// element reads the next JSON value of @graph into gr.elem: up to the
// end of the outermost object or array (strings skipped), or, for a
// scalar, up to the next ',', ']' or white space.
func (gr *graphReader) element() error {
	gr.elem = gr.elem[:0]
	depth, inStr, esc, done := 0, false, false, false
	for !done {
		chunk, _ := gr.br.Peek(gr.br.Buffered()) // what is buffered: no error
		if len(chunk) == 0 {
			if _, err := gr.br.Peek(1); err != nil {
				return gr.syntax(err)
			}
			continue
		}
		end := -1
		qAt := -1 // the next '"' in chunk at or after i when >= i (found once per string, not once per escape)
	scan:
		for i := 0; i < len(chunk); {
			if esc {
				esc = false
				i++
				continue
			}
			if inStr {
				// to the closing quote or the next escape at once
				if qAt < i {
					qAt = len(chunk)
					if q := bytes.IndexByte(chunk[i:], '"'); q >= 0 {
						qAt = i + q
					}
				}
				if bs := bytes.IndexByte(chunk[i:qAt], '\\'); bs >= 0 {
					i += bs + 1
					esc = true
					continue
				}
				if qAt == len(chunk) {
					break
				}
				i = qAt + 1
				inStr = false
				if depth == 0 {
					end, done = i, true
					break scan
				}
				continue
			}
			switch chunk[i] {
			case '"':
				inStr = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 { // a scalar ends here
					end, done = i, true
					break scan
				}
				depth--
				if depth == 0 {
					end, done = i+1, true
					break scan
				}
			case ',', ' ', '\t', '\n', '\r':
				if depth == 0 {
					end, done = i, true
					break scan
				}
			}
			i++
		}
		if end < 0 {
			end = len(chunk)
		}
		gr.elem = append(gr.elem, chunk[:end]...)
		if _, err := gr.take(end); err != nil {
			return err
		}
	}
	return nil
}

// generalNode decodes element i of @graph, elem, the general way.
func generalNode(elem []byte, i int) (*Node, error) {
	if _, err := canon.Transform(elem); err != nil {
		return nil, fmt.Errorf("not valid JSON: %s: %w", jsonpath.Index(`$["@graph"]`, i), err)
	}
	dec := json.NewDecoder(bytes.NewReader(elem))
	dec.UseNumber()
	var item any
	if err := dec.Decode(&item); err != nil {
		return nil, fmt.Errorf("not valid JSON: %s: %w", jsonpath.Index(`$["@graph"]`, i), err)
	}
	obj, ok := item.(map[string]any)
	if !ok {
		return nil, atPath(jsonpath.Index(`$["@graph"]`, i), errors.New("not an object"))
	}
	n, err := parseNode(obj)
	if err != nil {
		return nil, nodeError(i, idHint(obj), err)
	}
	return n, nil
}

// ScanJSONLDView is ScanJSONLD giving each node as a NodeView, valid only
// during the call of fn: a node in the canonical form WriteJSONLD writes
// is checked as ReadJSONLD checks it and given without building a *Node
// (no copy of its strings), for a caller that keeps a little of each node.
// Everything else (the order of the nodes, the errors, a repeated IRI, a
// document that is read whole) is as ScanJSONLD.
func ScanJSONLDView(r io.Reader, name string, fn func(*NodeView) error) error {
	return scanJSONLDView(r, name, fn, viewBatchNodes)
}

// scanJSONLDView is ScanJSONLDView with batches of at most batchNodes
// elements.
func scanJSONLDView(r io.Reader, name string, fn func(*NodeView) error, batchNodes int) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var prev []byte
	err := scanViewsIn(br, func(i int, v *NodeView) error {
		if i > 0 && bytes.Equal(v.ID, prev) {
			return nodeError(i, " ("+string(v.ID)+")", atPath(jsonpath.Member("", "@id"), errors.New("duplicate node")))
		}
		prev = append(prev[:0], v.ID...)
		if err := fn(v); err != nil {
			return callerError{err}
		}
		return nil
	}, batchNodes)
	var ce callerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce.err
	case err != errNotStreamed:
		return readError(err, name)
	}
	g, err := ReadJSONLD(br, name)
	if err != nil {
		return err
	}
	var v NodeView
	for _, n := range g.Nodes {
		viewOf(&v, n)
		if err := fn(&v); err != nil {
			return err
		}
	}
	return nil
}

// asNode is the node of v: the one it was made from (viewOf), else a copy
// (Node).
func (v *NodeView) asNode() *Node {
	if v.node != nil {
		return v.node
	}
	return v.Node()
}
