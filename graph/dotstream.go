package graph

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
)

// streamDOT writes the Graphviz picture of the event log src to w without
// building the graph: the bytes of Build(src).WriteDOT(w, do). It reads
// the subjects of the external sort of StreamNQuads (in subject IRI order)
// and keeps per drawn node only its time step, drawing kind and class (a
// few bytes) and its causal edges as pairs of node numbers, so a summary
// (above do.MaxNodes drawn nodes) of a long log takes memory for those
// arrays and no graph. While the drawn nodes are no more than
// do.MaxNodes their blocks are kept, and such a picture is drawn in full
// from them by WriteDOT. The returned stats carry the graph digest (the
// sha256 of the canonical N-Quads, computed on the side from the same
// sorted blocks), the number of quads, and the DOT bytes written; nothing
// is written to w when the log does not map.
func streamDOT(src EventSource, w io.Writer, opts Options, do DOTOptions, so StreamOptions) (StreamStats, error) {
	if do.MaxNodes <= 0 {
		do.MaxNodes = DefaultDOTMaxNodes
	}
	h := sha256.New()
	hw := newAsyncWriter(1<<20, h)
	nq := &nqReorder{w: hw}
	d := newDotStream(do)
	stats, err := streamBlocks(src, opts, so, true, func(pre, blk []byte) (int64, error) {
		// the block, its key expanded, held by nq until written
		n, blk, err := nq.push(pre, blk)
		if err != nil {
			return n, err
		}
		if err := d.block(blk); err != nil {
			return n, fmt.Errorf("graph: dot: node %s: %w", lineKey(blk), err)
		}
		return n, nil
	})
	if err == nil {
		var n int64
		n, err = nq.finish()
		stats.Quads += n
	}
	if herr := hw.Close(); err == nil {
		err = herr
	}
	if err != nil {
		return stats, err
	}
	stats.Digest = hex.EncodeToString(h.Sum(nil))
	cw := &countWriter{w: w}
	if err := d.write(cw); err != nil {
		return stats, fmt.Errorf("write dot: %w", err)
	}
	stats.Bytes = cw.n
	return stats, nil
}

// dotKindClass is the drawing kind and class name of a set of types.
type dotKindClass struct {
	kind  string
	class string
}

// dotCandidate is a node a --classes key may name: by its IRI, or by its
// witness:eventId.
type dotCandidate struct {
	id   string
	node int32 // index of the drawn node, -1 if not drawn
	n    *Node
}

// dotStream gathers a picture from the sorted blocks of StreamDOT.
type dotStream struct {
	opts DOTOptions
	sum  dotSummary
	cls  map[string]int32        // class name -> index in sum.names
	memo map[string]dotKindClass // sorted types, '\n'-joined -> kind, class
	// the IRIs of the drawn nodes, in order
	ids iriList
	// causal edges to nodes not read yet (a later IRI), resolved at the end
	pend    []dotPending
	targets iriList
	// the blocks, while the picture may be drawn in full
	keep bool
	kept [][]byte
	// --classes candidates
	direct, byEvent map[string]dotCandidate
	// scratch
	types [][]byte
	tkey  []byte
	rels  []dotRel
}

type dotPending struct {
	from int32 // the drawn node the edge leaves; its target is the same entry of targets
	rel  uint8
}

type dotRel struct {
	rel uint8
	to  []byte
}

func newDotStream(do DOTOptions) *dotStream {
	return &dotStream{opts: do, keep: true, sum: dotSummary{max: do.MaxNodes}, cls: map[string]int32{}, memo: map[string]dotKindClass{},
		direct: map[string]dotCandidate{}, byEvent: map[string]dotCandidate{}}
}

// checkedBlockID returns the subject IRI of a block, checking its key.
func checkedBlockID(blk []byte) ([]byte, error) {
	k := lineKey(blk)
	if len(k) < 2 || k[0] != '<' {
		return nil, errors.New("block without a subject")
	}
	return k[1 : len(k)-1], nil
}

// literalLex returns the lexical form of a literal object ("lex" or
// "lex"^^<datatype>) and its datatype IRI (nil for xsd:string). The form
// is obj's own bytes when it has no escape, else unescaped into buf.
func literalLex(buf, obj []byte) (lex, dt []byte, err error) {
	end := closingQuote(obj)
	if end < 0 {
		return nil, nil, fmt.Errorf("unterminated literal %q", obj)
	}
	rest := obj[end+1:]
	if len(rest) > 0 {
		if !bytes.HasPrefix(rest, []byte("^^<")) || rest[len(rest)-1] != '>' || len(rest) < 5 {
			return nil, nil, fmt.Errorf("unexpected literal %q", obj)
		}
		dt = rest[3 : len(rest)-1]
	}
	body := obj[1:end]
	if bytes.IndexByte(body, '\\') < 0 {
		return body, dt, nil
	}
	lex, err = unescapeNQuads(buf[:0], body)
	return lex, dt, err
}

// parseBlock reads a merged block (its "<subject>" key, then its sorted
// compact lines, streamline.go) into a canonical node.
func parseBlock(blk []byte) (*Node, error) {
	id, err := checkedBlockID(blk)
	if err != nil {
		return nil, err
	}
	n := NewNode(string(id))
	for rest := blk[len(id)+2:]; len(rest) > 0; {
		e := bytes.IndexByte(rest, '\n')
		if e < 0 {
			return nil, errors.New("block line without newline")
		}
		p, obj, dt, err := splitLine(rest[:e+1])
		if err != nil {
			return nil, err
		}
		rest = rest[e+1:]
		if obj[0] == '<' {
			if string(p) == RDFType {
				n.Types = append(n.Types, string(obj[1:len(obj)-1]))
				continue
			}
			n.Props[string(p)] = append(n.Props[string(p)], Term{IRI: string(obj[1 : len(obj)-1])})
			continue
		}
		lex, _, err := literalLex(nil, obj)
		if err != nil {
			return nil, err
		}
		t := Term{Lex: string(lex), Datatype: xsdString}
		if dt != nil {
			t.Datatype = string(dt)
		}
		n.Props[string(p)] = append(n.Props[string(p)], t)
	}
	n.canonicalize()
	return n, nil
}

// block takes the next subject's merged block, in subject IRI order.
func (d *dotStream) block(blk []byte) error {
	id, err := checkedBlockID(blk)
	if err != nil {
		return err
	}
	d.types, d.rels = d.types[:0], d.rels[:0]
	var seqLit, evLit []byte
	for rest := blk[len(id)+2:]; len(rest) > 0; {
		e := bytes.IndexByte(rest, '\n')
		if e < 0 {
			return errors.New("block line without newline")
		}
		p, obj, _, err := splitLine(rest[:e+1])
		if err != nil {
			return err
		}
		rest = rest[e+1:]
		iri := obj[0] == '<'
		switch string(p) {
		case RDFType:
			if iri {
				d.types = append(d.types, obj[1:len(obj)-1])
			}
		case WSeq:
			if !iri && seqLit == nil {
				seqLit = obj
			}
		case WEventID:
			if !iri && evLit == nil {
				evLit = obj
			}
		default:
			if iri {
				for r, de := range drawnEdges {
					if string(p) == de.pred {
						d.rels = append(d.rels, dotRel{rel: uint8(r), to: obj[1 : len(obj)-1]})
						break
					}
				}
			}
		}
	}
	kc := d.kindClass()
	var ev string
	if evLit != nil {
		lex, _, err := literalLex(nil, evLit)
		if err != nil {
			return err
		}
		ev = string(lex)
	}
	node := int32(-1)
	if kc.kind != "" {
		node = int32(len(d.sum.seq))
		seq := int64(-2)
		if seqLit != nil {
			lex, _, err := literalLex(nil, seqLit)
			if err != nil {
				return err
			}
			if len(lex) > 0 {
				seq = digits(string(lex))
			}
		}
		if seq == -2 { // NodeSeq without witness:seq: NodeEvent's position
			nev := ev
			if nev == "" {
				if seg := lastSegment(string(id)); seg != string(id) && eventSeq(seg) >= 0 {
					nev = seg
				}
			}
			seq = eventSeq(nev)
		}
		d.sum.add(seq, kc.kind, kc.class, d.cls)
		d.ids.add(id)
		for _, r := range d.rels {
			// blocks come in IRI order: a target before this node was read
			// already, and is a drawn node now or never
			switch c := bytes.Compare(r.to, id); {
			case c < 0:
				if t := d.ids.find(r.to); t >= 0 {
					d.sum.edges = append(d.sum.edges, dotEdge{from: node, to: t, rel: r.rel})
				}
			case c == 0:
				d.sum.edges = append(d.sum.edges, dotEdge{from: node, to: node, rel: r.rel})
			default:
				d.targets.add(r.to)
				d.pend = append(d.pend, dotPending{from: node, rel: r.rel})
			}
		}
		if d.keep && len(d.sum.seq) > d.opts.MaxNodes {
			d.keep, d.kept = false, nil
		}
	}
	if d.keep {
		d.kept = append(d.kept, bytes.Clone(blk))
	}
	// the nodes --classes may name
	_, byIRI := d.opts.Classes[string(id)]
	_, byEv := d.opts.Classes[ev]
	if byIRI || byEv && ev != "" {
		n, err := parseBlock(blk)
		if err != nil {
			return err
		}
		c := dotCandidate{id: n.ID, node: node, n: n}
		if byIRI {
			d.direct[n.ID] = c
		}
		if byEv && ev != "" {
			d.byEvent[ev] = c // the last node in IRI order, as resolveClasses
		}
	}
	return nil
}

// kindClass returns the drawing kind and class name of the types in
// d.types, computed once per set of types.
func (d *dotStream) kindClass() dotKindClass {
	slices.SortFunc(d.types, bytes.Compare)
	d.tkey = d.tkey[:0]
	for _, t := range d.types {
		d.tkey = append(d.tkey, t...)
		d.tkey = append(d.tkey, '\n')
	}
	if kc, ok := d.memo[string(d.tkey)]; ok {
		return kc
	}
	n := &Node{}
	for _, t := range d.types {
		n.Types = append(n.Types, string(t))
	}
	n.Types = slices.Compact(n.Types)
	kc := dotKindClass{kind: kindOf(n), class: className(n)}
	d.memo[string(d.tkey)] = kc
	return kc
}

// iriList holds IRIs end to end, most of them as the rest after one
// shared prefix (the session's "urn:witness:<session>/", taken from the
// first IRI): a few bytes each.
type iriList struct {
	prefix  []byte
	set     bool
	data    []byte
	ends    []uint32 // end of each IRI in data
	scratch [2][]byte
}

// iriShort marks an IRI kept as its rest after the prefix; an IRI starts
// with a letter.
const iriShort = 1

func (l *iriList) encode(dst, iri []byte) []byte {
	if len(l.prefix) > 0 && bytes.HasPrefix(iri, l.prefix) {
		return append(append(dst, iriShort), iri[len(l.prefix):]...)
	}
	return append(dst, iri...)
}

func (l *iriList) add(iri []byte) {
	if !l.set {
		l.set = true
		if c := bytes.IndexByte(iri, ':'); c >= 0 {
			if s := bytes.IndexByte(iri[c:], '/'); s >= 0 {
				l.prefix = bytes.Clone(iri[:c+s+1])
			}
		}
	}
	l.data = l.encode(l.data, iri)
	l.ends = append(l.ends, uint32(len(l.data)))
}

func (l *iriList) len() int { return len(l.ends) }

// at returns the i-th IRI in its kept form.
func (l *iriList) at(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.data[start:l.ends[i]]
}

// iri appends the i-th IRI to dst.
func (l *iriList) iri(dst []byte, i int) []byte {
	k := l.at(i)
	if len(k) > 0 && k[0] == iriShort {
		return append(append(dst, l.prefix...), k[1:]...)
	}
	return append(dst, k...)
}

// compare compares two IRIs in their kept forms (of one list's prefix)
// as IRIs.
func (l *iriList) compare(a, b []byte) int {
	sa, sb := len(a) > 0 && a[0] == iriShort, len(b) > 0 && b[0] == iriShort
	switch {
	case sa && sb:
		return bytes.Compare(a[1:], b[1:])
	case sa:
		l.scratch[0] = append(append(l.scratch[0][:0], l.prefix...), a[1:]...)
		return bytes.Compare(l.scratch[0], b)
	case sb:
		l.scratch[0] = append(append(l.scratch[0][:0], l.prefix...), b[1:]...)
		return bytes.Compare(a, l.scratch[0])
	}
	return bytes.Compare(a, b)
}

// find returns the index of iri in the list (sorted), or -1.
func (l *iriList) find(iri []byte) int32 {
	l.scratch[1] = l.encode(l.scratch[1][:0], iri)
	return l.findKept(l.scratch[1])
}

// findKept is find for an IRI in its kept form.
func (l *iriList) findKept(k []byte) int32 {
	lo, hi := 0, l.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.compare(l.at(m), k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < l.len() && l.compare(l.at(lo), k) == 0 {
		return int32(lo)
	}
	return -1
}

// write draws the picture: in full from the kept blocks, or the summary.
func (d *dotStream) write(w io.Writer) error {
	if d.keep {
		g := &Graph{Nodes: make([]*Node, 0, len(d.kept))}
		for _, b := range d.kept {
			n, err := parseBlock(b)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		}
		return g.WriteDOT(w, d.opts)
	}
	s := &d.sum
	var to []byte
	for i, p := range d.pend {
		to = d.targets.iri(to[:0], i)
		if t := d.ids.find(to); t >= 0 {
			s.edges = append(s.edges, dotEdge{from: p.from, to: t, rel: p.rel})
		}
	}
	d.pend, d.targets = nil, iriList{}
	// as resolveClasses: a key is a node IRI, else an event id; a node's
	// IRI wins over its event id
	resolved := make(map[string]string, len(d.opts.Classes))
	cands := map[string]dotCandidate{}
	for k, v := range d.opts.Classes {
		if _, ok := d.direct[k]; ok {
			continue
		}
		if c, ok := d.byEvent[k]; ok {
			resolved[c.id], cands[c.id] = v, c
		}
	}
	for k, v := range d.opts.Classes {
		if c, ok := d.direct[k]; ok {
			resolved[c.id], cands[c.id] = v, c
		}
	}
	for id, class := range resolved {
		if c := cands[id]; c.node >= 0 {
			s.found = append(s.found, dotFinding{id: id, node: c.node, n: c.n, class: class})
		}
	}
	bw := bufio.NewWriter(w)
	writeDOTHead(bw, d.opts.Title)
	s.write(bw)
	bw.WriteString("}\n")
	return bw.Flush()
}
