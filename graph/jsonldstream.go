package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// StreamJSONLD writes the canonical JSON-LD document of the event log src
// to w without building the graph, node by node, with the bounded memory
// of StreamNQuads (the same external sort, ordered by subject IRI). The
// bytes equal Build(src).WriteJSONLD. The returned stats carry the graph
// digest (the sha256 of the canonical N-Quads, computed on the side from
// the same sorted blocks), the number of quads, and the JSON-LD bytes
// written.
func StreamJSONLD(src EventSource, w io.Writer, opts Options, so StreamOptions) (StreamStats, error) {
	return streamJSONLD(src, w, nil, opts, so)
}

// StreamViews streams the graph of the event log src as StreamJSONLD
// does, but hands each node to fn instead of writing the document: the
// NodeView ScanJSONLDView gives for that node of StreamJSONLD's document,
// in the document's order, valid only during the call. Nothing is
// formatted or parsed as JSON. An error from fn stops the stream and is
// returned. The stats carry the graph digest and the number of quads, as
// StreamJSONLD's (Bytes is 0).
func StreamViews(src EventSource, opts Options, so StreamOptions, fn func(*NodeView) error) (StreamStats, error) {
	return streamJSONLD(src, nil, fn, opts, so)
}

// streamJSONLD is StreamJSONLD (w) or StreamViews (fn).
func streamJSONLD(src EventSource, w io.Writer, fn func(*NodeView) error, opts Options, so StreamOptions) (StreamStats, error) {
	h := sha256.New()
	hw := newAsyncWriter(1<<20, h)
	cw := &countWriter{w: io.Discard}
	var jw *asyncWriter
	if w != nil {
		cw.w = w
		jw = newAsyncWriter(1<<20, cw)
	}
	// nothing is written before every event mapped: the head comes with
	// the first node (or the end)
	head := []byte(`{"@context":` + ContextJSON + `,"@graph":[`)
	nq := &nqReorder{w: hw}
	var jn jsonldNode
	var view NodeView
	var buf []byte
	first := true
	stats, err := streamBlocks(src, opts, so, true, func(pre, blk []byte) (int64, error) {
		// the block, its key expanded, held by nq until written
		n, blk, nerr := nq.push(pre, blk)
		if nerr != nil {
			return n, nerr
		}
		if fn != nil {
			if err := jn.view(&view, blk); err != nil {
				return 0, fmt.Errorf("node view: node %s: %w", lineKey(blk), err)
			}
			return n, fn(&view)
		}
		buf = buf[:0]
		if first {
			buf = append(buf, head...)
		} else {
			buf = append(buf, ',')
		}
		first = false
		var err error
		if buf, err = jn.append(buf, blk); err != nil {
			return 0, fmt.Errorf("write json-ld: node %s: %w", lineKey(blk), err)
		}
		jw.Write(buf)
		return n, nil
	})
	if err == nil {
		var n int64
		n, err = nq.finish()
		stats.Quads += n
		if jw != nil {
			if first {
				jw.Write(head)
			}
			jw.Write([]byte("]}\n"))
		}
	}
	herr := hw.Close()
	var jerr error
	if jw != nil {
		jerr = jw.Close()
	}
	if err == nil {
		err = herr
	}
	if err == nil {
		err = jerr
	}
	if err != nil {
		return stats, err
	}
	stats.Bytes = cw.n
	stats.Digest = hex.EncodeToString(h.Sum(nil))
	return stats, nil
}

// nqReorder turns blocks in subject IRI order into "<subject>" order (the
// canonical N-Quads order) and writes their lines. The two orders differ
// only where one IRI is a prefix of the next and the next goes on with a
// byte below '>': "<a/e1>" sorts after "<a/e10>". A block is held while
// the following IRIs extend it that way; the held blocks form a chain of
// prefixes, so the stack is at most as deep as an IRI is long.
type nqReorder struct {
	w     blockWriter
	stack [][]byte // held blocks, each a copy; each key a prefix of the next
	spare [][]byte // buffers of popped blocks, for reuse
}

// blockWriter writes the N-Quads lines of a block (a "<subject>" key, then
// compact lines; pre: what a key beginning with keyMark stands for) and
// returns how many: asyncWriter, or hashBlocks for NQuadsDigest.
type blockWriter interface {
	block(pre, blk []byte) (int64, error)
}

func blockID(blk []byte) []byte {
	k := lineKey(blk)
	return k[1 : len(k)-1]
}

// push takes the next block in IRI order (pre: what a key beginning with
// keyMark stands for, streamBlocks) and returns the lines written since
// the last call, and its copy (key expanded), valid until the next call.
func (r *nqReorder) push(pre, blk []byte) (int64, []byte, error) {
	var c []byte
	if len(r.spare) > 0 {
		c = r.spare[len(r.spare)-1][:0]
		r.spare = r.spare[:len(r.spare)-1]
	}
	k := len(lineKey(blk))
	c = appendKey(c, pre, blk[:k])
	c, err := appendExpanded(c, pre, blk[k:])
	if err != nil {
		return 0, c, err
	}
	id := blockID(c)
	var n int64
	for len(r.stack) > 0 {
		top := r.stack[len(r.stack)-1]
		t := blockID(top)
		if bytes.HasPrefix(id, t) && len(id) > len(t) && id[len(t)] < '>' {
			break
		}
		k, err := r.pop()
		n += k
		if err != nil {
			return n, c, err
		}
	}
	r.stack = append(r.stack, c)
	return n, c, nil
}

func (r *nqReorder) pop() (int64, error) {
	top := r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
	n, err := r.w.block(nil, top)
	r.spare = append(r.spare, top)
	return n, err
}

// finish writes the held blocks and returns their lines.
func (r *nqReorder) finish() (int64, error) {
	var n int64
	for len(r.stack) > 0 {
		k, err := r.pop()
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// jsonldKey is a predicate's or datatype's compact JSON key and its IRI.
type jsonldKey struct {
	key, iri string
}

// jsonldNode is the reusable scratch of one node's JSON object, read from
// a merged block of canonical N-Quads lines.
type jsonldNode struct {
	types  [][]byte
	groups []jsonldGroup
	keys   map[string]jsonldKey // predicate or datatype IRI -> its compact JSON key
	// the order of the groups by key, by the sequence of their predicate
	// codes (known predicates only): nodes of one kind share it
	perms  map[string][]int
	sig    []byte
	sorted []jsonldGroup
	lex    []byte
	// view's: the literals unescaped, the IRIs of types, predicates and
	// datatypes as strings (few distinct; bounded)
	vlex []byte
	tv   []TermView
	strs map[string]string
}

type jsonldGroup struct {
	key  string      // compact predicate
	pred string      // the predicate IRI
	objs []jsonldObj // objects, in line order (the canonical order)
}

// jsonldObj is an object of a compact line: an IRI "<iri>" or a literal
// "\"lex\"" (N-Quads escapes), and its datatype (nil: xsd:string).
type jsonldObj struct {
	o, dt []byte
}

// group reads the block blk of one node into j.types (sorted) and its
// groups, and returns the node's IRI and the groups in the document's
// order (by compact key).
func (j *jsonldNode) group(blk []byte) ([]byte, []jsonldGroup, error) {
	if j.keys == nil {
		j.keys = map[string]jsonldKey{}
	}
	j.types = j.types[:0]
	for i := range j.groups {
		j.groups[i].objs = j.groups[i].objs[:0]
	}
	j.groups = j.groups[:0]
	j.sig = j.sig[:0]
	sigOK := true
	key := lineKey(blk)
	id := key[1 : len(key)-1]
	var lastP []byte
	for rest := blk[len(key):]; len(rest) > 0; {
		e := bytes.IndexByte(rest, '\n')
		if e < 0 {
			return nil, nil, errors.New("block line without newline")
		}
		code := rest[0]
		p, obj, dt, err := splitLine(rest[:e+1])
		if err != nil {
			return nil, nil, err
		}
		rest = rest[e+1:]
		if dt == nil && string(p) == RDFType && obj[0] == '<' {
			j.types = append(j.types, obj[1:len(obj)-1])
			continue
		}
		if lastP == nil || !bytes.Equal(p, lastP) {
			k, ok := j.keys[string(p)]
			if !ok {
				k = jsonldKey{key: compact(string(p)), iri: string(p)}
				j.keys[string(p)] = k
			}
			if len(j.groups) < cap(j.groups) {
				j.groups = j.groups[:len(j.groups)+1]
				j.groups[len(j.groups)-1].key = k.key
			} else {
				j.groups = append(j.groups, jsonldGroup{key: k.key})
			}
			j.groups[len(j.groups)-1].pred = k.iri
			lastP = p
			j.sig = append(j.sig, code)
			sigOK = sigOK && (code-predBase)%2 == 0
		}
		g := &j.groups[len(j.groups)-1]
		g.objs = append(g.objs, jsonldObj{obj, dt})
	}
	// types by IRI (line order puts "<a/x>" after "<a/x1>")
	slices.SortFunc(j.types, bytes.Compare)
	return id, j.sortGroups(sigOK), nil
}

// append appends the canonical JSON object (appendNodeJSON's bytes) of the
// node whose block is blk.
func (j *jsonldNode) append(b, blk []byte) ([]byte, error) {
	id, groups, err := j.group(blk)
	if err != nil {
		return b, err
	}
	b = append(b, `{"@id":`...)
	if b, err = appendJSONBytes(b, id); err != nil {
		return b, err
	}
	if len(j.types) > 0 {
		b = append(b, `,"@type":`...)
		if len(j.types) > 1 {
			b = append(b, '[')
		}
		for i, t := range j.types {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, j.compact(t)); err != nil {
				return b, err
			}
		}
		if len(j.types) > 1 {
			b = append(b, ']')
		}
	}
	for _, g := range groups {
		b = append(b, ',')
		if b, err = appendJSONString(b, g.key); err != nil {
			return b, err
		}
		b = append(b, ':')
		if len(g.objs) > 1 {
			b = append(b, '[')
		}
		for i, o := range g.objs {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = j.appendObject(b, o.o, o.dt); err != nil {
				return b, err
			}
		}
		if len(g.objs) > 1 {
			b = append(b, ']')
		}
	}
	return append(b, '}'), nil
}

// lessKey is lessUTF16 without allocating for ASCII keys.
func lessKey(a, b string) bool {
	for i := 0; i < len(a); i++ {
		if a[i] >= utf8.RuneSelf {
			return lessUTF16(a, b)
		}
	}
	for i := 0; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return lessUTF16(a, b)
		}
	}
	return a < b
}

// appendObject appends the JSON value (appendJSONValue's bytes) of one
// object of a compact line.
func (j *jsonldNode) appendObject(b, o, dt []byte) ([]byte, error) {
	var err error
	if o[0] == '<' {
		b = append(b, `{"@id":`...)
		b, err = appendJSONBytes(b, o[1:len(o)-1])
		return append(b, '}'), err
	}
	if o[0] != '"' || len(o) < 2 || o[len(o)-1] != '"' {
		return b, fmt.Errorf("unexpected object %q", o)
	}
	if dt != nil {
		b = append(b, `{"@type":`...)
		if b, err = appendJSONString(b, j.compact(dt)); err != nil {
			return b, err
		}
		b = append(b, `,"@value":`...)
	}
	if b, err = j.appendLiteral(b, o[1:len(o)-1]); err != nil {
		return b, err
	}
	if dt != nil {
		b = append(b, '}')
	}
	return b, nil
}

// sortGroups returns the groups ordered by key (UTF-16 order), through the
// remembered permutation of their predicate sequence when cached.
func (j *jsonldNode) sortGroups(cached bool) []jsonldGroup {
	byKey := func(x, y jsonldGroup) int {
		if x.key == y.key {
			return 0
		}
		if lessKey(x.key, y.key) {
			return -1
		}
		return 1
	}
	// a bounded cache, whatever the log
	if !cached || len(j.perms) >= 4096 && j.perms[string(j.sig)] == nil {
		slices.SortFunc(j.groups, byKey)
		return j.groups
	}
	if j.perms == nil {
		j.perms = map[string][]int{}
	}
	perm, ok := j.perms[string(j.sig)]
	if !ok {
		perm = make([]int, len(j.groups))
		for i := range perm {
			perm[i] = i
		}
		slices.SortFunc(perm, func(a, b int) int { return byKey(j.groups[a], j.groups[b]) })
		j.perms[string(j.sig)] = perm
	}
	j.sorted = j.sorted[:0]
	for _, i := range perm {
		j.sorted = append(j.sorted, j.groups[i])
	}
	return j.sorted
}

// compact is compact(iri), remembered.
func (j *jsonldNode) compact(iri []byte) string { return j.key(iri).key }

// key is iri's jsonldKey, remembered.
func (j *jsonldNode) key(iri []byte) jsonldKey {
	k, ok := j.keys[string(iri)]
	if !ok {
		k = jsonldKey{key: compact(string(iri)), iri: string(iri)}
		j.keys[string(iri)] = k
	}
	return k
}

// appendJSONBytes is appendJSONString(b, string(s)) without the copy when
// s needs no escape (printable ASCII but '"' and '\\').
func appendJSONBytes(b, s []byte) ([]byte, error) {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return appendJSONString(b, string(s))
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// appendLiteral appends the JSON string (appendJSONString's bytes) of the
// literal whose N-Quads body (AppendEscaped's escapes) is body, straight
// from one escaping to the other: the short escapes are the same in both
// but for JSON's raw DEL, \u00XX is \u00xx. A body that is not valid
// UTF-8 or holds another escape goes the long way (unescape, then
// appendJSONString), which decides.
func (j *jsonldNode) appendLiteral(b, body []byte) ([]byte, error) {
	start := len(b)
	b = append(b, '"')
	valid := false // the body from the first non-ASCII byte on is valid UTF-8
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c >= 0x80 {
			if !valid {
				if !utf8.Valid(body[i:]) {
					return j.appendLiteralSlow(b[:start], body)
				}
				valid = true
			}
			b = append(b, c)
			continue
		}
		if c != '\\' {
			if c < 0x20 || c == '"' {
				return j.appendLiteralSlow(b[:start], body)
			}
			b = append(b, c)
			continue
		}
		if i+1 >= len(body) {
			return j.appendLiteralSlow(b[:start], body)
		}
		switch e := body[i+1]; e {
		case 'b', 't', 'n', 'f', 'r', '"', '\\':
			b = append(b, '\\', e)
			i++
		case 'u':
			if i+5 >= len(body) || body[i+2] != '0' || body[i+3] != '0' {
				return j.appendLiteralSlow(b[:start], body)
			}
			h, l := body[i+4], body[i+5]
			switch {
			case h == '7' && l == 'F':
				b = append(b, 0x7f)
			case (h == '0' || h == '1') && (l >= '0' && l <= '9' || l >= 'A' && l <= 'F') &&
				!(h == '0' && (l == '8' || l == '9' || l == 'A' || l == 'C' || l == 'D')): // those have short escapes
				b = append(b, '\\', 'u', '0', '0', h, l|0x20*byte(boolInt(l >= 'A')))
			default:
				return j.appendLiteralSlow(b[:start], body)
			}
			i += 5
		default:
			return j.appendLiteralSlow(b[:start], body)
		}
	}
	return append(b, '"'), nil
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func (j *jsonldNode) appendLiteralSlow(b, body []byte) ([]byte, error) {
	var err error
	if j.lex, err = unescapeNQuads(j.lex[:0], body); err != nil {
		return b, err
	}
	return appendJSONString(b, string(j.lex))
}

// closingQuote returns the index of the unescaped '"' that closes the
// literal starting at o[0], or -1.
func closingQuote(o []byte) int {
	for i := 1; i < len(o); i++ {
		switch o[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescapeNQuads is the inverse of AppendEscaped.
func unescapeNQuads(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i+1 >= len(s) {
			return dst, errors.New("literal ends in a backslash")
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 't':
			dst = append(dst, '\t')
		case 'n':
			dst = append(dst, '\n')
		case 'f':
			dst = append(dst, '\f')
		case 'r':
			dst = append(dst, '\r')
		case '"':
			dst = append(dst, '"')
		case '\\':
			dst = append(dst, '\\')
		case 'u', 'U':
			w := 4
			if s[i] == 'U' {
				w = 8
			}
			if i+w >= len(s) {
				return dst, errors.New("short \\u escape in literal")
			}
			var r rune
			for _, h := range s[i+1 : i+1+w] {
				d := strings.IndexByte("0123456789ABCDEF", h)
				if d < 0 {
					d = strings.IndexByte("0123456789abcdef", h)
				}
				if d < 0 {
					return dst, errors.New("bad \\u escape in literal")
				}
				r = r<<4 | rune(d)
			}
			dst = utf8.AppendRune(dst, r)
			i += w
		default:
			return dst, fmt.Errorf("unknown escape \\%c in literal", s[i])
		}
	}
	return dst, nil
}

// view fills v with the NodeView ScanJSONLDView reads from the JSON object
// append writes for the block blk: the IRI, the types (expanded, sorted),
// one property per predicate in the object's order (by compact key), the
// values in line order, literals unescaped with their datatype (XSDString
// for a plain string). v's bytes are blk's or j's, valid until the next
// call.
func (j *jsonldNode) view(v *NodeView, blk []byte) error {
	id, groups, err := j.group(blk)
	if err != nil {
		return err
	}
	if j.strs == nil {
		j.strs = map[string]string{}
	}
	// unescaped literals are no longer than their escapes: one buffer of
	// the block's size never moves while it is filled
	if cap(j.vlex) < len(blk) {
		j.vlex = make([]byte, 0, len(blk))
	}
	j.vlex = j.vlex[:0]
	v.ID, v.node = id, nil
	v.Types = v.Types[:0]
	for _, t := range j.types {
		v.Types = append(v.Types, j.str(t))
	}
	nv := 0
	for _, g := range groups {
		nv += len(g.objs)
	}
	v.Props = slices.Grow(v.Props[:0], len(groups))[:len(groups)]
	j.tv = slices.Grow(j.tv[:0], nv)[:nv]
	clear(j.tv)
	vals := j.tv
	if !utf8.Valid(id) {
		return errInvalidUTF8
	}
	for i, g := range groups {
		p := &v.Props[i]
		p.Pred = g.pred
		p.Vals = vals[:len(g.objs):len(g.objs)]
		vals = vals[len(g.objs):]
		for k, o := range g.objs {
			t := &p.Vals[k]
			if o.o[0] == '<' {
				t.IRI = o.o[1 : len(o.o)-1]
				if !utf8.Valid(t.IRI) {
					return errInvalidUTF8
				}
				continue
			}
			if o.o[0] != '"' || len(o.o) < 2 || o.o[len(o.o)-1] != '"' {
				return fmt.Errorf("unexpected object %q", o.o)
			}
			body := o.o[1 : len(o.o)-1]
			if bytes.IndexByte(body, '\\') < 0 {
				t.Lex = body
			} else {
				start := len(j.vlex)
				if j.vlex, err = unescapeNQuads(j.vlex, body); err != nil {
					return err
				}
				t.Lex = j.vlex[start:len(j.vlex):len(j.vlex)]
			}
			if !utf8.Valid(t.Lex) {
				// the document cannot hold it either (canon.AppendString)
				return errInvalidUTF8
			}
			t.Datatype = xsdString
			if o.dt != nil {
				t.Datatype = j.key(o.dt).iri
			}
		}
	}
	return nil
}

var errInvalidUTF8 = errors.New("invalid UTF-8 in a literal or IRI")

// str is string(b), remembered (at most 4096 of them).
func (j *jsonldNode) str(b []byte) string {
	if s, ok := j.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(j.strs) < 4096 {
		j.strs[s] = s
	}
	return s
}
