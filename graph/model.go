package graph

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"
)

// Term is the object of a statement: a resource when IRI is set, otherwise a
// literal with lexical form Lex and datatype IRI Datatype ("" means
// xsd:string).
type Term struct {
	IRI      string
	Lex      string
	Datatype string
}

// Ref returns a resource term.
func Ref(iri string) Term { return Term{IRI: iri} }

// Str returns an xsd:string literal.
func Str(s string) Term { return Term{Lex: s, Datatype: xsdString} }

// Lit returns a literal of the given datatype.
func Lit(lex, datatype string) Term { return Term{Lex: lex, Datatype: datatype} }

// IsIRI reports whether t is a resource.
func (t Term) IsIRI() bool { return t.IRI != "" }

// datatype returns the datatype IRI, xsd:string when unset.
func (t Term) datatype() string {
	if t.Datatype == "" {
		return xsdString
	}
	return t.Datatype
}

// nQuad returns t in RDFC-1.0 canonical N-Quads form: <iri>, "lex" for
// xsd:string, "lex"^^<datatype> otherwise.
func (t Term) nQuad() string {
	return string(appendTerm(nil, t))
}

// Node is one subject of the graph: its IRI, its rdf:type values and its
// other properties (full IRIs as keys). Graph methods keep Types and every
// Props slice sorted (by IRI, and by N-Quads form) and free of duplicates.
type Node struct {
	ID    string
	Types []string
	Props map[string][]Term
}

// NewNode returns an empty node with the given IRI.
func NewNode(id string) *Node { return &Node{ID: id, Props: map[string][]Term{}} }

// HasType reports whether n has the rdf:type t.
func (n *Node) HasType(t string) bool { return slices.Contains(n.Types, t) }

// Refs returns the IRIs that n points to through pred, sorted.
func (n *Node) Refs(pred string) []string {
	var out []string
	for _, t := range n.Props[pred] {
		if t.IRI != "" {
			out = append(out, t.IRI)
		}
	}
	return out
}

// Values returns the lexical forms of the literals of n under pred, in the
// node's canonical order.
func (n *Node) Values(pred string) []string {
	var out []string
	for _, t := range n.Props[pred] {
		if t.IRI == "" {
			out = append(out, t.Lex)
		}
	}
	return out
}

// Value returns the first literal of n under pred, or "".
func (n *Node) Value(pred string) string {
	for _, t := range n.Props[pred] {
		if t.IRI == "" {
			return t.Lex
		}
	}
	return ""
}

// Add adds the statement (n, pred, t), keeping the node canonical. Adding
// rdf:type with a resource adds to Types.
func (n *Node) Add(pred string, t Term) {
	if pred == RDFType && t.IRI != "" {
		n.addType(t.IRI)
		return
	}
	if n.Props == nil {
		n.Props = map[string][]Term{}
	}
	if t.IRI == "" && t.Datatype == "" {
		t.Datatype = xsdString
	}
	vals := n.Props[pred]
	key := t.nQuad()
	i := sort.Search(len(vals), func(i int) bool { return vals[i].nQuad() >= key })
	if i < len(vals) && vals[i].nQuad() == key {
		return
	}
	n.Props[pred] = slices.Insert(vals, i, t)
}

// addType adds an rdf:type.
func (n *Node) addType(t string) {
	i, found := slices.BinarySearch(n.Types, t)
	if !found {
		n.Types = slices.Insert(n.Types, i, t)
	}
}

// Predicates returns n's property IRIs (rdf:type excluded), sorted.
func (n *Node) Predicates() []string {
	out := make([]string, 0, len(n.Props))
	for p, v := range n.Props {
		if len(v) > 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// canonicalize sorts and de-duplicates n's types and values in place.
func (n *Node) canonicalize() {
	slices.Sort(n.Types)
	n.Types = slices.Compact(n.Types)
	for p, vals := range n.Props {
		for i := range vals {
			if vals[i].IRI == "" && vals[i].Datatype == "" {
				vals[i].Datatype = xsdString
			}
		}
		sort.SliceStable(vals, func(i, j int) bool { return vals[i].nQuad() < vals[j].nQuad() })
		vals = slices.CompactFunc(vals, func(a, b Term) bool { return a == b })
		if len(vals) == 0 {
			delete(n.Props, p)
			continue
		}
		n.Props[p] = vals
	}
}

// Graph is a PROV graph: nodes sorted by ID, each with a unique IRI.
type Graph struct {
	Nodes []*Node // sorted by ID
	index map[string]*Node
}

// New returns an empty graph.
func New() *Graph { return &Graph{index: map[string]*Node{}} }

// Node returns the node with IRI id, or nil.
func (g *Graph) Node(id string) *Node {
	if g.index == nil {
		g.reindex()
	}
	return g.index[id]
}

func (g *Graph) reindex() {
	g.index = make(map[string]*Node, len(g.Nodes))
	for _, n := range g.Nodes {
		g.index[n.ID] = n
	}
}

// errDuplicateNode is returned by AddNode for an IRI already in the graph.
var errDuplicateNode = errors.New("node already in the graph")

// AddNode inserts n (for overlays such as firewall checks or replay marks),
// keeping the graph sorted and n canonical. n.ID must be a valid IRI that is
// not yet in the graph; use Ensure to extend an existing node.
func (g *Graph) AddNode(n *Node) error {
	if err := CheckIRI(n.ID); err != nil {
		return fmt.Errorf("add node: %w", err)
	}
	if g.Node(n.ID) != nil {
		return fmt.Errorf("add node %s: %w", n.ID, errDuplicateNode)
	}
	for _, t := range n.Types {
		if err := CheckIRI(t); err != nil {
			return fmt.Errorf("add node %s: type: %w", n.ID, err)
		}
	}
	for p, vals := range n.Props {
		if err := CheckIRI(p); err != nil {
			return fmt.Errorf("add node %s: predicate: %w", n.ID, err)
		}
		if p == RDFType {
			return fmt.Errorf("add node %s: put rdf:type in Types, not Props", n.ID)
		}
		for _, v := range vals {
			if err := checkTerm(v); err != nil {
				return fmt.Errorf("add node %s: %s: %w", n.ID, p, err)
			}
		}
	}
	if n.Props == nil {
		n.Props = map[string][]Term{}
	}
	n.canonicalize()
	i := sort.Search(len(g.Nodes), func(i int) bool { return g.Nodes[i].ID >= n.ID })
	g.Nodes = slices.Insert(g.Nodes, i, n)
	g.index[n.ID] = n
	return nil
}

// ensure returns the node with IRI id, adding an empty one if needed.
func (g *Graph) ensure(id string) (*Node, error) {
	if n := g.Node(id); n != nil {
		return n, nil
	}
	n := NewNode(id)
	if err := g.AddNode(n); err != nil {
		return nil, err
	}
	return n, nil
}

// Add adds the statement (s, p, o), creating the subject node if needed.
func (g *Graph) Add(s, p string, o Term) error {
	if err := CheckIRI(p); err != nil {
		return fmt.Errorf("add %s: predicate: %w", s, err)
	}
	if err := checkTerm(o); err != nil {
		return fmt.Errorf("add %s %s: %w", s, p, err)
	}
	n, err := g.ensure(s)
	if err != nil {
		return err
	}
	n.Add(p, o)
	return nil
}

// OfType returns the nodes that have rdf:type t, in ID order.
func (g *Graph) OfType(t string) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.HasType(t) {
			out = append(out, n)
		}
	}
	return out
}

// ByEventID returns the node carrying witness:eventId id (the primary node of
// that event), or nil.
func (g *Graph) ByEventID(id string) *Node {
	for _, n := range g.Nodes {
		for _, v := range n.Props[WEventID] {
			if v.IRI == "" && v.Lex == id {
				return n
			}
		}
	}
	return nil
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.Nodes) }

// checkTerm validates a term for emission.
func checkTerm(t Term) error {
	if t.IRI != "" {
		return CheckIRI(t.IRI)
	}
	if t.Datatype != "" {
		if err := CheckIRI(t.Datatype); err != nil {
			return fmt.Errorf("datatype: %w", err)
		}
	}
	if !validUTF8(t.Lex) {
		return errors.New("literal is not valid UTF-8")
	}
	return nil
}

// CheckIRI refuses what is not an absolute IRI the graph can emit verbatim in
// N-Quads and JSON-LD: a scheme, then no space, control, '<', '>', '"', '{',
// '}', '|', '^', '`' or '\'; and no scheme equal to a context prefix.
func CheckIRI(s string) error { return checkIRI(s) }

// iriExcludedBytes marks the bytes an IRI may not contain: controls,
// space, DEL and <>"{}|^`\ (a table: checkIRI runs on every IRI of a
// graph that is read back).
var iriExcludedBytes = func() (t [256]bool) {
	for c := 0; c <= 0x20; c++ {
		t[c] = true
	}
	t[0x7f] = true
	for _, c := range []byte("<>\"{}|^`\\") {
		t[c] = true
	}
	return t
}()

// checkIRI is CheckIRI for the text of a string or of bytes (the JSON-LD
// reader checks IRIs in its buffer without a copy).
func checkIRI[T string | []byte](s T) error {
	iriExcluded := &iriExcludedBytes
	if len(s) == 0 {
		return errors.New("empty IRI")
	}
	colon := -1
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			colon = i
			break
		}
	}
	if colon <= 0 {
		return fmt.Errorf("IRI %q has no scheme", s)
	}
	for i := 0; i < colon; i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')
		if !ok {
			return fmt.Errorf("IRI %q has an invalid scheme", s)
		}
	}
	scheme := s[:colon]
	for _, p := range prefixes {
		if string(scheme) == p.name {
			return fmt.Errorf("IRI %q uses the context prefix %q as a scheme", s, p.name)
		}
	}
	if colon+3 == len(s) && s[colon+1] == '/' && s[colon+2] == '/' {
		return fmt.Errorf("IRI %q has an empty authority", s)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if iriExcluded[c] {
			return fmt.Errorf("IRI %q contains the character %q", s, c)
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid([]byte(s)) {
		return fmt.Errorf("IRI %q is not valid UTF-8", s)
	}
	return nil
}
