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

// StreamDOT writes the Graphviz picture of the event log src to w without
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
func StreamDOT(src EventSource, w io.Writer, opts Options, do DOTOptions, so StreamOptions) (StreamStats, error) {
	if do.MaxNodes <= 0 {
		do.MaxNodes = DefaultDOTMaxNodes
	}
	h := sha256.New()
	hw := newAsyncWriter(h, 1<<20)
	nq := &nqReorder{w: hw}
	d := newDotStream(do)
	stats, err := streamBlocks(src, opts, so, true, func(blk []byte) (int64, error) {
		if err := d.block(blk); err != nil {
			return 0, fmt.Errorf("graph: dot: node %s: %w", lineKey(blk), err)
		}
		return nq.push(blk)
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
	// the IRIs of the drawn nodes, in order, end to end: ids[ends[i-1]:ends[i]]
	ids  []byte
	ends []int
	// causal edges from drawn nodes, resolved once every drawn node is known
	pend    []dotPending
	targets []byte
	// the blocks, while the picture may be drawn in full
	keep bool
	kept [][]byte
	// --classes candidates
	direct, byEvent map[string]dotCandidate
	// scratch
	types [][]byte
	tkey  []byte
	rels  []dotRel
	lex   []byte
}

type dotPending struct {
	from     int32
	rel      uint8
	off, end int // the target IRI: targets[off:end]
}

type dotRel struct {
	rel uint8
	to  []byte
}

func newDotStream(do DOTOptions) *dotStream {
	return &dotStream{opts: do, keep: true, sum: dotSummary{max: do.MaxNodes}, cls: map[string]int32{}, memo: map[string]dotKindClass{},
		direct: map[string]dotCandidate{}, byEvent: map[string]dotCandidate{}}
}

// splitQuadLine splits a block line " <p> OBJECT ." into p (without its
// brackets) and the object's N-Quads form.
func splitQuadLine(line []byte) (p, obj []byte, err error) {
	if len(line) < 6 || line[0] != ' ' || line[1] != '<' || !bytes.HasSuffix(line, []byte(" .")) {
		return nil, nil, fmt.Errorf("unexpected quad line %q", line)
	}
	pe := bytes.IndexByte(line[2:], '>')
	if pe < 0 || 2+pe+2 > len(line)-2 || line[2+pe+1] != ' ' {
		return nil, nil, fmt.Errorf("unexpected quad line %q", line)
	}
	obj = line[2+pe+2 : len(line)-2]
	if len(obj) < 2 || (obj[0] != '<' || obj[len(obj)-1] != '>') && obj[0] != '"' {
		return nil, nil, fmt.Errorf("unexpected object in quad line %q", line)
	}
	return line[2 : 2+pe], obj, nil
}

// blockID returns the subject IRI of a block, checking its key.
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

// parseBlock reads a merged block (its "<subject>" key, then its
// canonical N-Quads lines without the subject) into a canonical node.
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
		p, obj, err := splitQuadLine(rest[:e])
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
		lex, dt, err := literalLex(nil, obj)
		if err != nil {
			return nil, err
		}
		t := Term{Lex: string(lex), Datatype: XSDString}
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
		p, obj, err := splitQuadLine(rest[:e])
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
	kc, err := d.kindClass()
	if err != nil {
		return err
	}
	var ev string
	if evLit != nil {
		lex, _, err := literalLex(d.lex, evLit)
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
			lex, _, err := literalLex(d.lex, seqLit)
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
		d.ids = append(d.ids, id...)
		d.ends = append(d.ends, len(d.ids))
		for _, r := range d.rels {
			off := len(d.targets)
			d.targets = append(d.targets, r.to...)
			d.pend = append(d.pend, dotPending{from: node, rel: r.rel, off: off, end: len(d.targets)})
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
func (d *dotStream) kindClass() (dotKindClass, error) {
	slices.SortFunc(d.types, bytes.Compare)
	d.tkey = d.tkey[:0]
	for _, t := range d.types {
		d.tkey = append(d.tkey, t...)
		d.tkey = append(d.tkey, '\n')
	}
	if kc, ok := d.memo[string(d.tkey)]; ok {
		return kc, nil
	}
	n := &Node{}
	for _, t := range d.types {
		n.Types = append(n.Types, string(t))
	}
	n.Types = slices.Compact(n.Types)
	kc := dotKindClass{kind: kindOf(n), class: className(n)}
	d.memo[string(d.tkey)] = kc
	return kc, nil
}

// drawnIndex returns the index of the drawn node with IRI id, or -1.
func (d *dotStream) drawnIndex(id []byte) int32 {
	lo, hi := 0, len(d.ends)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		start := 0
		if m > 0 {
			start = d.ends[m-1]
		}
		if bytes.Compare(d.ids[start:d.ends[m]], id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(d.ends) {
		start := 0
		if lo > 0 {
			start = d.ends[lo-1]
		}
		if bytes.Equal(d.ids[start:d.ends[lo]], id) {
			return int32(lo)
		}
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
	s.edges = make([]dotEdge, 0, len(d.pend))
	for _, p := range d.pend {
		if t := d.drawnIndex(d.targets[p.off:p.end]); t >= 0 {
			s.edges = append(s.edges, dotEdge{from: p.from, to: t, rel: p.rel})
		}
	}
	d.pend, d.targets = nil, nil
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
