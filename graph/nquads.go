package graph

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
)

// appendTerm appends t in canonical N-Quads form.
func appendTerm(b []byte, t Term) []byte {
	if t.IRI != "" {
		b = append(b, '<')
		b = append(b, t.IRI...)
		return append(b, '>')
	}
	b = append(b, '"')
	b = AppendEscaped(b, t.Lex)
	b = append(b, '"')
	if dt := t.datatype(); dt != xsdString {
		b = append(b, "^^<"...)
		b = append(b, dt...)
		b = append(b, '>')
	}
	return b
}

// AppendEscaped appends s escaped as an RDFC-1.0 canonical N-Quads string
// literal body: \b \t \n \f \r \" \\ as short escapes, every other
// character in U+0000..U+001F and U+007F as \u00XX (upper-case hex), and
// everything else as raw UTF-8.
func AppendEscaped(b []byte, s string) []byte { return appendEscaped(b, s) }

// appendEscaped is AppendEscaped of a string or of bytes (a NodeView's).
func appendEscaped[S string | []byte](b []byte, s S) []byte {
	const hexd = "0123456789ABCDEF"
	start := 0
	for i := 0; i < len(s); i++ {
		// runs of plain bytes at once
		for i < len(s) && plainNQ[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		var esc string
		switch c {
		case '\b':
			esc = `\b`
		case '\t':
			esc = `\t`
		case '\n':
			esc = `\n`
		case '\f':
			esc = `\f`
		case '\r':
			esc = `\r`
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		default:
			if c >= 0x20 && c != 0x7f {
				continue
			}
		}
		b = append(b, s[start:i]...)
		if esc != "" {
			b = append(b, esc...)
		} else {
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// plainNQ: the bytes AppendEscaped copies as they are.
var plainNQ = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != 0x7f
	}
	return t
}()

// appendQuad appends one canonical N-Quads line (default graph) with its
// newline.
func appendQuad(b []byte, s, p string, o Term) []byte {
	b = append(b, '<')
	b = append(b, s...)
	b = append(b, "> <"...)
	b = append(b, p...)
	b = append(b, "> "...)
	b = appendTerm(b, o)
	return append(b, " .\n"...)
}

// WriteNQuads writes the RDFC-1.0 canonical N-Quads of g to w and returns
// the graph digest: the lower-case hex sha256 of the bytes written (what
// sha256sum prints for the file). Lines are produced node by node, in the
// order of their "<subject>" key, so memory stays at one node's lines.
func (g *Graph) WriteNQuads(w io.Writer) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	order := make([]*Node, len(g.Nodes))
	copy(order, g.Nodes)
	// "<a/e1/assoc>" sorts before "<a/e1>": compare ids as if followed by '>'
	slices.SortFunc(order, func(a, b *Node) int { return compareKey(a.ID, b.ID) })
	var lines [][]byte
	var buf []byte
	for i, n := range order {
		if i > 0 && order[i-1].ID == n.ID {
			continue
		}
		lines, buf = lines[:0], buf[:0]
		var offs []int
		add := func(p string, o Term) {
			offs = append(offs, len(buf))
			buf = appendQuad(buf, n.ID, p, o)
		}
		for _, t := range n.Types {
			add(RDFType, Ref(t))
		}
		for p, vals := range n.Props {
			for _, v := range vals {
				add(p, v)
			}
		}
		for k, off := range offs {
			end := len(buf)
			if k+1 < len(offs) {
				end = offs[k+1]
			}
			lines = append(lines, buf[off:end])
		}
		slices.SortFunc(lines, bytes.Compare)
		lines = slices.CompactFunc(lines, bytes.Equal)
		for _, l := range lines {
			if _, err := bw.Write(l); err != nil {
				return "", err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compareKey orders IRIs as their N-Quads subjects "<iri>" order.
func compareKey(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) < len(b): // a ends: '>' against b's next byte
		if '>' < b[n] {
			return -1
		}
		return 1
	default:
		if a[n] < '>' {
			return -1
		}
		return 1
	}
}
