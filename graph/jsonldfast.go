package graph

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// NodeView is one @graph node as ScanJSONLDView gives it: the node
// ReadJSONLD would read, without a *Node. Its byte slices and slices point
// into the reader's buffers and are valid only during the call that gives
// the view; a caller keeps what it needs by copying it.
type NodeView struct {
	// ID is the node's IRI.
	ID []byte
	// Types are the node's rdf:type IRIs (expanded), sorted, without
	// duplicates.
	Types []string
	// Props are the node's properties, one per predicate (rdf:type
	// excluded), each with at least one value.
	Props []PropView
	// node is the Node the general way read, for a non-canonical element.
	node *Node
	// off and n locate the element in the stream read (n is 0 when the
	// document was read whole).
	off, n int64
}

// Span returns where the view's @graph element is in the document, from
// where the reader began: its offset and length in bytes. A document
// read whole (not in the form WriteJSONLD writes) has no spans: n is 0.
func (v *NodeView) Span() (off, n int64) { return v.off, v.n }

// PropView is one property of a NodeView.
type PropView struct {
	// Pred is the expanded predicate IRI.
	Pred string
	// Vals are the values in the node's canonical order, without
	// duplicates.
	Vals []TermView
}

// TermView is one value of a PropView: a resource (IRI set, never empty)
// or a literal (Lex and Datatype, XSDString for a plain string).
type TermView struct {
	IRI      []byte
	Lex      []byte
	Datatype string
}

// HasType reports whether v has the rdf:type t.
func (v *NodeView) HasType(t string) bool { return slices.Contains(v.Types, t) }

// viewOf fills v with n's content (predicates sorted), for the nodes the
// general way reads.
func viewOf(v *NodeView, n *Node) {
	v.node = n
	v.ID = []byte(n.ID)
	v.Types = n.Types
	v.Props = v.Props[:0]
	for _, p := range n.Predicates() {
		pv := PropView{Pred: p}
		for _, t := range n.Props[p] {
			tv := TermView{Lex: []byte(t.Lex), Datatype: t.datatype()}
			if t.IRI != "" {
				tv = TermView{IRI: []byte(t.IRI)}
			}
			pv.Vals = append(pv.Vals, tv)
		}
		v.Props = append(v.Props, pv)
	}
}

// canonNodeParser reads one @graph element in the exact canonical form
// appendNodeJSON writes ({"@id":..., "@type":..., then keys in UTF-16
// order, strings with RFC 8785 escapes only}) straight into a NodeView (or
// a Node), with the checks parseNode makes (IRIs, keywords, datatypes,
// lexical forms). Anything else, valid or not, makes parse report false,
// and the element goes the general way (canon.Transform, encoding/json,
// parseNode), which accepts or names the error: the shortcut never accepts
// what the general way refuses, and gives the same node.
//
// The view it fills reuses the parser's buffers: parsing allocates only
// for a predicate, type or datatype not seen before, and the Node that
// parse returns.
type canonNodeParser struct {
	b      []byte
	i      int
	intern map[string]string // expanded keys, types and datatypes, checked
	// unesc holds the unescaped strings of the element (of every element
	// since keep was set: views of earlier elements point into it).
	unesc []byte
	keep  bool
	prev  []byte // N-Quads form of the previous value of a key
	cur   []byte
	view  NodeView
	types []string
	vals  []TermView // every value of the element; props cut windows of it
	ends  []int      // end of each prop's values in vals
}

// Node returns the Node of the view, its strings copied: it stays valid
// after the view's bytes are reused.
func (v *NodeView) Node() *Node {
	n := &Node{ID: string(v.ID), Props: make(map[string][]Term, len(v.Props))}
	if len(v.Types) > 0 {
		n.Types = slices.Clone(v.Types)
	}
	for _, pv := range v.Props {
		vals := make([]Term, len(pv.Vals))
		for j, t := range pv.Vals {
			vals[j] = t.term()
		}
		n.Props[pv.Pred] = vals
	}
	return n
}

// term is t as a Term (its strings copied).
func (t TermView) term() Term {
	if len(t.IRI) > 0 {
		return Term{IRI: string(t.IRI)}
	}
	return Term{Lex: string(t.Lex), Datatype: t.Datatype}
}

// parseView reads elem into the parser's view.
func (p *canonNodeParser) parseView(elem []byte) (*NodeView, bool) {
	p.b, p.i = elem, 0
	if !p.keep {
		p.unesc = p.unesc[:0]
	}
	if !p.lit(`{"@id":`) {
		return nil, false
	}
	id, ok := p.string()
	if !ok || checkIRI(id) != nil {
		return nil, false
	}
	v := &p.view
	v.ID = id
	p.types = p.types[:0]
	if p.lit(`,"@type":`) {
		if p.peek() == '[' {
			p.i++
			for k := 0; ; k++ {
				if k > 0 && !p.lit(",") {
					break
				}
				t, ok := p.iriKey()
				if !ok {
					return nil, false
				}
				// as Node.AddType: sorted, a repeated type once
				if i, found := slices.BinarySearch(p.types, t); !found {
					p.types = slices.Insert(p.types, i, t)
				}
			}
			if !p.lit("]") || len(p.types) < 2 {
				return nil, false
			}
		} else {
			t, ok := p.iriKey()
			if !ok {
				return nil, false
			}
			p.types = append(p.types, t)
		}
	}
	v.Types = p.types
	v.Props = v.Props[:0]
	p.vals, p.ends = p.vals[:0], p.ends[:0]
	var lastKey []byte
	for p.lit(",") {
		k, ok := p.string()
		if !ok || len(k) == 0 || k[0] == '@' || (lastKey != nil && !lessKey(string(lastKey), string(k))) || !p.lit(":") {
			return nil, false
		}
		lastKey = k
		pred, ok := p.expanded(k)
		if !ok || pred == RDFType {
			return nil, false
		}
		for _, q := range v.Props {
			if q.Pred == pred {
				// (two keys that expand alike: their values merge, the general way)
				return nil, false
			}
		}
		start := len(p.vals)
		if p.peek() == '[' {
			p.i++
			for j := 0; ; j++ {
				if j > 0 && !p.lit(",") {
					break
				}
				t, ok := p.value()
				if !ok {
					return nil, false
				}
				p.vals = append(p.vals, t)
			}
			if !p.lit("]") || len(p.vals)-start < 2 {
				return nil, false
			}
			// the canonical order, without duplicates: what Node.Add keeps
			p.prev = p.prev[:0]
			for j, t := range p.vals[start:] {
				p.cur = appendTerm(p.cur[:0], t.term())
				if j > 0 && bytes.Compare(p.prev, p.cur) >= 0 {
					return nil, false
				}
				p.prev, p.cur = p.cur, p.prev
			}
		} else {
			t, ok := p.value()
			if !ok {
				return nil, false
			}
			p.vals = append(p.vals, t)
		}
		v.Props = append(v.Props, PropView{Pred: pred})
		p.ends = append(p.ends, len(p.vals))
	}
	if !p.lit("}") || p.i != len(p.b) {
		return nil, false
	}
	start := 0
	for k := range v.Props {
		v.Props[k].Vals = p.vals[start:p.ends[k]:p.ends[k]]
		start = p.ends[k]
	}
	return v, true
}

func (p *canonNodeParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *canonNodeParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// expanded expands and checks a compact key, type or datatype, once per
// distinct text.
func (p *canonNodeParser) expanded(k []byte) (string, bool) {
	if full, ok := p.intern[string(k)]; ok {
		return full, true
	}
	full := expand(string(k))
	if CheckIRI(full) != nil {
		return "", false
	}
	if len(p.intern) < 4096 {
		p.intern[string(k)] = full
	}
	return full, true
}

func (p *canonNodeParser) iriKey() (string, bool) {
	s, ok := p.string()
	if !ok {
		return "", false
	}
	return p.expanded(s)
}

// value reads a string, {"@id":IRI} or {"@type":DT,"@value":LEX}.
func (p *canonNodeParser) value() (TermView, bool) {
	switch p.peek() {
	case '"':
		s, ok := p.string()
		return TermView{Lex: s, Datatype: xsdString}, ok
	case '{':
	default:
		return TermView{}, false
	}
	if p.lit(`{"@id":`) {
		s, ok := p.string()
		if !ok || checkIRI(s) != nil || !p.lit("}") {
			return TermView{}, false
		}
		return TermView{IRI: s}, true
	}
	if !p.lit(`{"@type":`) {
		return TermView{}, false
	}
	dt, ok := p.iriKey()
	if !ok || !p.lit(`,"@value":`) {
		return TermView{}, false
	}
	lex, ok := p.string()
	if !ok || !p.lit("}") || !p.lexicalOK(lex, dt) {
		return TermView{}, false
	}
	return TermView{Lex: lex, Datatype: dt}, true
}

// lexicalOK is checkLexical for the lexical form lex of datatype dt.
func (p *canonNodeParser) lexicalOK(lex []byte, dt string) bool {
	switch dt {
	case xsdDateTime, xsdBoolean, XSDInteger:
		return checkLexical(string(lex), dt) == nil
	}
	return true
}

// strStops marks the bytes that end the plain run of a string: the
// closing quote, an escape, and the control characters JSON forbids.
var strStops = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// string reads a JSON string with the escapes RFC 8785 writes (\" \\ \b
// \f \n \r \t, \u00XX for other controls) and valid UTF-8. The bytes are
// the element's own, or, with escapes, their unescaped copy in p.unesc.
func (p *canonNodeParser) string() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	p.i++
	start := p.i
	var high byte // the OR of the bytes: ASCII when < 0x80
	for p.i < len(p.b) {
		c := p.b[p.i]
		if !strStops[c] {
			high |= c
			p.i++
			continue
		}
		if c == '"' {
			raw := p.b[start:p.i:p.i]
			p.i++
			if high >= utf8.RuneSelf && !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		}
		if c == '\\' {
			return p.escaped(start)
		}
		return nil, false // a control character
	}
	return nil, false
}

// escaped finishes a string that starts at start and has an escape at p.i,
// unescaping it at the end of p.unesc (when it grows, the strings before
// stay where they are, in the array they were written to).
func (p *canonNodeParser) escaped(start int) ([]byte, bool) {
	from := len(p.unesc)
	s := append(p.unesc, p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.unesc = s
			out := s[from:len(s):len(s)]
			if !utf8.Valid(out) {
				return nil, false
			}
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			s = append(s, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return nil, false
		}
		switch e := p.b[p.i+1]; e {
		case '"', '\\':
			s = append(s, e)
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			if p.i+6 > len(p.b) || p.b[p.i+2] != '0' || p.b[p.i+3] != '0' {
				return nil, false
			}
			hi, lo := hexVal(p.b[p.i+4]), hexVal(p.b[p.i+5])
			if hi < 0 || lo < 0 || hi > 1 {
				return nil, false
			}
			s = append(s, byte(hi<<4|lo))
			p.i += 6
			continue
		default:
			return nil, false
		}
		p.i += 2
	}
	return nil, false
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
