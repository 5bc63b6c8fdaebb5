package graph

import (
	"bytes"
	"unicode/utf8"
)

// canonNodeParser reads one @graph element in the exact canonical form
// appendNodeJSON writes ({"@id":..., "@type":..., then keys in UTF-16
// order, strings with RFC 8785 escapes only}) straight into a Node, with
// the checks parseNode makes (IRIs, keywords, datatypes, lexical forms).
// Anything else, valid or not, makes parse report false, and the element
// goes the general way (canon.Transform, encoding/json, parseNode), which
// accepts or names the error: the shortcut never accepts what the general
// way refuses, and gives the same node.
type canonNodeParser struct {
	b      []byte
	i      int
	intern map[string]string // expanded keys, types and datatypes, checked
	str    []byte
	prev   []byte // N-Quads form of the previous value of a key
	cur    []byte
}

func (p *canonNodeParser) parse(elem []byte) (*Node, bool) {
	p.b, p.i = elem, 0
	if !p.lit(`{"@id":`) {
		return nil, false
	}
	id, ok := p.string()
	if !ok || CheckIRI(id) != nil {
		return nil, false
	}
	n := &Node{ID: id}
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
				n.AddType(t)
			}
			if !p.lit("]") || len(n.Types) < 2 {
				return nil, false
			}
		} else {
			t, ok := p.iriKey()
			if !ok {
				return nil, false
			}
			n.Types = []string{t}
		}
	}
	n.Props = map[string][]Term{}
	lastKey := ""
	for p.lit(",") {
		k, ok := p.string()
		if !ok || k == "" || k[0] == '@' || (lastKey != "" && !lessKey(lastKey, k)) || !p.lit(":") {
			return nil, false
		}
		lastKey = k
		pred, ok := p.expanded(k)
		if !ok || pred == RDFType || n.Props[pred] != nil {
			// (two keys that expand alike: their values merge, the general way)
			return nil, false
		}
		var vals []Term
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
				vals = append(vals, t)
			}
			if !p.lit("]") || len(vals) < 2 {
				return nil, false
			}
		} else {
			t, ok := p.value()
			if !ok {
				return nil, false
			}
			vals = []Term{t}
		}
		// the canonical order, without duplicates: what Node.Add keeps
		p.prev = p.prev[:0]
		for j, t := range vals {
			p.cur = appendTerm(p.cur[:0], t)
			if j > 0 && bytes.Compare(p.prev, p.cur) >= 0 {
				return nil, false
			}
			p.prev, p.cur = p.cur, p.prev
		}
		n.Props[pred] = vals
	}
	if !p.lit("}") || p.i != len(p.b) {
		return nil, false
	}
	return n, true
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
func (p *canonNodeParser) expanded(k string) (string, bool) {
	if full, ok := p.intern[k]; ok {
		return full, true
	}
	full := expand(k)
	if CheckIRI(full) != nil {
		return "", false
	}
	if len(p.intern) < 4096 {
		p.intern[k] = full
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
func (p *canonNodeParser) value() (Term, bool) {
	switch p.peek() {
	case '"':
		s, ok := p.string()
		return Term{Lex: s, Datatype: XSDString}, ok
	case '{':
	default:
		return Term{}, false
	}
	if p.lit(`{"@id":`) {
		s, ok := p.string()
		if !ok || CheckIRI(s) != nil || !p.lit("}") {
			return Term{}, false
		}
		return Term{IRI: s}, true
	}
	if !p.lit(`{"@type":`) {
		return Term{}, false
	}
	dt, ok := p.iriKey()
	if !ok || !p.lit(`,"@value":`) {
		return Term{}, false
	}
	lex, ok := p.string()
	if !ok || !p.lit("}") || checkLexical(lex, dt) != nil {
		return Term{}, false
	}
	return Term{Lex: lex, Datatype: dt}, true
}

// string reads a JSON string with the escapes RFC 8785 writes (\" \\ \b
// \f \n \r \t, \u00XX for other controls) and valid UTF-8.
func (p *canonNodeParser) string() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			raw := p.b[start:p.i]
			p.i++
			if !utf8.Valid(raw) {
				return "", false
			}
			return string(raw), true
		}
		if c == '\\' {
			return p.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		p.i++
	}
	return "", false
}

// escaped finishes a string that starts at start and has an escape at p.i.
func (p *canonNodeParser) escaped(start int) (string, bool) {
	s := append(p.str[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.str = s
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c < 0x20:
			return "", false
		case c != '\\':
			s = append(s, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", false
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
				return "", false
			}
			hi, lo := hexVal(p.b[p.i+4]), hexVal(p.b[p.i+5])
			if hi < 0 || lo < 0 || hi > 1 {
				return "", false
			}
			s = append(s, byte(hi<<4|lo))
			p.i += 6
			continue
		default:
			return "", false
		}
		p.i += 2
	}
	return "", false
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
