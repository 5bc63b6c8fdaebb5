package jsontree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/agent-trace-witness/witness/internal/jsonpath"
)

// CheckNames refuses a document in which one object, at any depth, has two
// members whose names are equal or differ only in letter case ("name" and
// "Name", or "k" and the Kelvin sign "K"). Readers disagree on such
// documents: some take the first duplicate, some the last, and a
// case-insensitive decoder (encoding/json) may read "Name" where a
// case-sensitive one reads "name". The error names file, line and the field
// path of the second member (as ObjectReader does). Syntax errors are left
// to Parse: CheckNames reports only names, and returns nil for a document
// it cannot tokenize. It streams, keeping one small frame per open
// container; run jsonlimit.Check first to bound the nesting.
func CheckNames(data []byte, file string) error {
	type frame struct {
		obj     bool
		path    string
		n       int               // array: index of the next element
		key     string            // object: name of the current member
		wantKey bool              // object: the next token is a name or '}'
		seen    map[string]string // object: folded name -> first spelling
	}
	var stack []*frame
	valuePath := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			return jsonpath.Member(f.path, f.key)
		}
		return jsonpath.Index(f.path, f.n)
	}
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.wantKey = true
		} else {
			f.n++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey {
			f := stack[len(stack)-1]
			k, ok := tok.(string)
			if !ok { // '}'
				stack = stack[:len(stack)-1]
				afterValue()
				continue
			}
			fk := foldKey(k)
			if first, dup := f.seen[fk]; dup {
				msg := fmt.Sprintf("member name %q appears twice in one object", k)
				if first != k {
					msg = fmt.Sprintf("member name %q differs from %q only in letter case (a case-insensitive reader could take either)", k, first)
				}
				line, col := lineCol(data, off)
				return &Error{File: file, Line: int64(line), Col: col, Field: jsonpath.Member(f.path, k), Msg: msg}
			}
			f.seen[fk] = k
			f.key, f.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, path: valuePath(), wantKey: true, seen: map[string]string{}})
		case json.Delim('['):
			stack = append(stack, &frame{path: valuePath()})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			afterValue()
		default:
			afterValue()
		}
	}
}

// foldKey maps s to one representative of its case-folding class: every
// rune becomes the smallest rune of its Unicode simple-folding orbit, so two
// strings have the same key exactly when strings.EqualFold says they are
// equal.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}
