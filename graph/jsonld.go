package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// compact writes iri as prefix:local when it starts with a context
// namespace, and verbatim otherwise.
func compact(iri string) string {
	for _, p := range prefixes {
		if strings.HasPrefix(iri, p.ns) && len(iri) > len(p.ns) && !strings.HasPrefix(iri[len(p.ns):], "//") {
			return p.name + ":" + iri[len(p.ns):]
		}
	}
	return iri
}

// expand is the inverse of compact for keys, types and datatypes.
func expand(s string) string {
	name, local, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	for _, p := range prefixes {
		if name == p.name {
			return p.ns + local
		}
	}
	return s
}

func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func appendJSONString(b []byte, s string) ([]byte, error) {
	return canon.AppendString(b, s)
}

func appendJSONValue(b []byte, t Term) ([]byte, error) {
	var err error
	if t.IRI != "" {
		b = append(b, `{"@id":`...)
		b, err = appendJSONString(b, t.IRI)
		return append(b, '}'), err
	}
	dt := t.datatype()
	if dt == xsdString {
		return appendJSONString(b, t.Lex)
	}
	b = append(b, `{"@type":`...)
	if b, err = appendJSONString(b, compact(dt)); err != nil {
		return b, err
	}
	b = append(b, `,"@value":`...)
	b, err = appendJSONString(b, t.Lex)
	return append(b, '}'), err
}

// appendNodeJSON appends the canonical JSON object of n.
func appendNodeJSON(b []byte, n *Node) ([]byte, error) {
	type kv struct {
		key  string
		vals []Term
	}
	keys := make([]kv, 0, len(n.Props))
	for p, v := range n.Props {
		if len(v) > 0 {
			keys = append(keys, kv{compact(p), v})
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i].key, keys[j].key) })
	var err error
	b = append(b, `{"@id":`...)
	if b, err = appendJSONString(b, n.ID); err != nil {
		return b, err
	}
	if len(n.Types) > 0 {
		b = append(b, `,"@type":`...)
		if len(n.Types) > 1 {
			b = append(b, '[')
		}
		for i, t := range n.Types {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, compact(t)); err != nil {
				return b, err
			}
		}
		if len(n.Types) > 1 {
			b = append(b, ']')
		}
	}
	for _, k := range keys {
		b = append(b, ',')
		if b, err = appendJSONString(b, k.key); err != nil {
			return b, err
		}
		b = append(b, ':')
		if len(k.vals) > 1 {
			b = append(b, '[')
		}
		for i, v := range k.vals {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONValue(b, v); err != nil {
				return b, err
			}
		}
		if len(k.vals) > 1 {
			b = append(b, ']')
		}
	}
	return append(b, '}'), nil
}

// WriteJSONLD writes g as one canonical JSON document (RFC 8785: keys
// sorted, no whitespace) with the embedded context, its @graph sorted by
// @id, and a final newline.
func (g *Graph) WriteJSONLD(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"@context":` + ContextJSON + `,"@graph":[`)
	var buf []byte
	for i, n := range g.Nodes {
		n.canonicalize()
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendNodeJSON(buf, n); err != nil {
			return fmt.Errorf("write json-ld: node %s: %w", n.ID, err)
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// JSONLD returns the JSON-LD document of g.
func (g *Graph) JSONLD() ([]byte, error) {
	var b bytes.Buffer
	err := g.WriteJSONLD(&b)
	return b.Bytes(), err
}

// ReadJSONLD reads a graph document written by WriteJSONLD. It is strict:
// the context must be the embedded one, node ids absolute IRIs, values
// strings, {"@id"} or {"@type","@value"} objects, or arrays of them. Errors
// name the file (name), the node and the field, and carry exit code
// Tampered.
//
// A document that begins as WriteJSONLD's do is read as a stream, node by
// node (graphReader), in memory for the graph and one node's text; any
// other is read whole. Both give the same graph and refuse the same
// documents.
func ReadJSONLD(r io.Reader, name string) (*Graph, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	g, err := readStream(br)
	if err == nil {
		return g, nil
	}
	if err != errNotStreamed {
		return nil, readError(err, name)
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %w", name, err), "")
	}
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("graph %w", err),
			"the graph is not a witness PROV graph; regenerate it with 'witness graph --events FILE'")
	}
	g, err = parseJSONLD(data)
	if err != nil {
		return nil, readError(err, name)
	}
	return g, nil
}

// scanJSONLD reads a graph document as ReadJSONLD does and gives each node
// to fn, so that a caller can keep what it needs of a node instead of the
// whole *Graph. A document that begins as WriteJSONLD writes it is
// streamed: fn sees the nodes in document order (sorted, for a graph
// witness wrote), one at a time, and only two consecutive nodes with the
// same IRI are refused here (as ReadJSONLD refuses them); a caller that
// needs unique IRIs checks them itself. Any other document is read whole
// (ReadJSONLD) and its nodes given in ID order. The read errors are
// ReadJSONLD's; an error of fn ends the scan and is returned unchanged.
// It is ScanJSONLDView with each view made a node.
func scanJSONLD(r io.Reader, name string, fn func(*Node) error) error {
	return ScanJSONLDView(r, name, func(v *NodeView) error { return fn(v.asNode()) })
}

// callerError carries an error of ScanJSONLDView's fn through the reader.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }

// readError places an error of the graph document name and gives it exit
// code Tampered.
func readError(err error, name string) error {
	var le *jsonlimit.Error
	if errors.As(err, &le) {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("graph %w", le.In(name, 1)),
			"the graph is not a witness PROV graph; regenerate it with 'witness graph --events FILE'")
	}
	var rf *readFailure
	if errors.As(err, &rf) {
		return exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %w", name, rf.err), "")
	}
	{
		var je *jsontree.Error
		if errors.As(err, &je) && je.File == "" {
			je.File = name // "file: $.path: message", the one position format
		} else {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return exitcode.New(exitcode.Tampered, fmt.Errorf("graph %w", err),
			"the graph is not a witness PROV graph; regenerate it with 'witness graph --events FILE'")
	}
}

var ctxValue = func() map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(ContextJSON), &m); err != nil {
		panic(err)
	}
	return m
}

func parseJSONLD(data []byte) (*Graph, error) {
	if _, err := canon.Transform(data); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	for k := range doc {
		if k != "@context" && k != "@graph" {
			return nil, atPath(jsonpath.Member("", k), errors.New("unexpected top-level key (expected @context and @graph)"))
		}
	}
	ctx, ok := doc["@context"].(map[string]any)
	if !ok {
		return nil, atPath(`$["@context"]`, errors.New("missing or not the embedded witness context object"))
	}
	want := ctxValue()
	if len(ctx) != len(want) {
		return nil, atPath(`$["@context"]`, errors.New("not the witness context (other contexts are not fetched or processed)"))
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v := want[k]
		if ctx[k] != v {
			return nil, atPath(jsonpath.Member(`$["@context"]`, k), fmt.Errorf("must be %q", v))
		}
	}
	list, ok := doc["@graph"].([]any)
	if !ok {
		return nil, atPath(`$["@graph"]`, errors.New("missing or not an array"))
	}
	g := New()
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, atPath(jsonpath.Index(`$["@graph"]`, i), errors.New("not an object"))
		}
		n, err := parseNode(obj)
		if err != nil {
			return nil, nodeError(i, idHint(obj), err)
		}
		if g.index[n.ID] != nil {
			return nil, nodeError(i, " ("+n.ID+")", atPath(jsonpath.Member("", "@id"), errors.New("duplicate node")))
		}
		g.index[n.ID] = n
		g.Nodes = append(g.Nodes, n)
	}
	sortNodes(g.Nodes)
	return g, nil
}

// atPath is an error about the value at path (rooted at the document or,
// inside parseNode, at the node), in the one position format.
func atPath(path string, err error) error {
	return &jsontree.Error{Field: path, Err: err}
}

// nodeError places an error of node i of @graph: its path is rebased
// under $["@graph"][i] and the node's @id is named after the message.
func nodeError(i int, hint string, err error) error {
	base := jsonpath.Index(`$["@graph"]`, i)
	var je *jsontree.Error
	if errors.As(err, &je) && strings.HasPrefix(je.Field, "$") {
		return &jsontree.Error{Field: base + je.Field[1:], Msg: je.Err.Error() + hint, Err: je.Err}
	}
	return &jsontree.Error{Field: base, Msg: err.Error() + hint, Err: err}
}

func idHint(obj map[string]any) string {
	if s, ok := obj["@id"].(string); ok {
		return " (" + s + ")"
	}
	return ""
}

func parseNode(obj map[string]any) (*Node, error) {
	id, ok := obj["@id"].(string)
	if !ok {
		return nil, atPath(`$["@id"]`, errors.New("missing or not a string"))
	}
	if err := CheckIRI(id); err != nil {
		return nil, atPath(`$["@id"]`, err)
	}
	n := NewNode(id)
	// keys in sorted order, so that a node with several bad members is
	// always refused at the same one (a map's order is random)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		switch {
		case k == "@id":
		case k == "@type":
			types, err := stringList(v)
			if err != nil {
				return nil, atPath(`$["@type"]`, err)
			}
			for _, t := range types {
				full := expand(t)
				if err := CheckIRI(full); err != nil {
					return nil, atPath(`$["@type"]`, err)
				}
				n.addType(full)
			}
		case strings.HasPrefix(k, "@"):
			return nil, atPath(jsonpath.Member("", k), errors.New("keyword not allowed in a witness graph node"))
		default:
			p := expand(k)
			if err := CheckIRI(p); err != nil {
				return nil, atPath(jsonpath.Member("", k), err)
			}
			if p == RDFType {
				return nil, atPath(jsonpath.Member("", k), errors.New("use @type"))
			}
			vals, ok := v.([]any)
			if !ok {
				vals = []any{v}
			}
			if len(vals) == 0 {
				return nil, atPath(jsonpath.Member("", k), errors.New("empty array"))
			}
			for j, x := range vals {
				t, err := parseValue(x)
				if err != nil {
					if len(vals) > 1 {
						return nil, atPath(jsonpath.Index(jsonpath.Member("", k), j), err)
					}
					return nil, atPath(jsonpath.Member("", k), err)
				}
				n.Add(p, t)
			}
		}
	}
	return n, nil
}

func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case string:
		return []string{t}, nil
	case []any:
		if len(t) == 0 {
			return nil, errors.New("empty array")
		}
		out := make([]string, len(t))
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("[%d] is not a string", i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, errors.New("must be a string or an array of strings")
}

func parseValue(x any) (Term, error) {
	switch t := x.(type) {
	case string:
		return Str(t), nil
	case map[string]any:
		if id, ok := t["@id"]; ok {
			s, ok := id.(string)
			if !ok || len(t) != 1 {
				return Term{}, errors.New(`a reference must be {"@id": IRI} and nothing else`)
			}
			if err := CheckIRI(s); err != nil {
				return Term{}, err
			}
			return Ref(s), nil
		}
		lex, ok1 := t["@value"].(string)
		dt, ok2 := t["@type"].(string)
		if !ok1 || !ok2 || len(t) != 2 {
			return Term{}, errors.New(`a typed literal must be {"@type": DATATYPE, "@value": STRING} and nothing else`)
		}
		full := expand(dt)
		if err := CheckIRI(full); err != nil {
			return Term{}, fmt.Errorf("datatype: %w", err)
		}
		if err := checkLexical(lex, full); err != nil {
			return Term{}, err
		}
		return Lit(lex, full), nil
	case json.Number:
		return Term{}, fmt.Errorf("bare number %s: numbers are written as typed strings", t)
	case bool:
		return Term{}, errors.New(`bare boolean: write {"@type":"xsd:boolean","@value":"true"}`)
	case nil:
		return Term{}, errors.New("null value")
	}
	return Term{}, errors.New("nested arrays or objects are not allowed")
}

// checkLexical checks the canonical lexical form of the datatypes the graph
// emits.
func checkLexical(lex, dt string) error {
	switch dt {
	case xsdDateTime:
		c, err := dateTime(lex)
		if err != nil {
			return err
		}
		if c != lex {
			return fmt.Errorf("dateTime %q is not canonical (want %q)", lex, c)
		}
	case xsdBoolean:
		if lex != "true" && lex != "false" {
			return fmt.Errorf("boolean %q is not true or false", lex)
		}
	case XSDInteger:
		if !canonicalInteger(lex) {
			return fmt.Errorf("integer %q is not canonical", lex)
		}
	}
	return nil
}

func canonicalInteger(s string) bool {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
