package jsontree

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckFoldedNames refuses an object, at any depth of v, holding two member
// names that differ only in letter case ("name" and "Name", or "k" and the
// Kelvin sign "K"): a case-insensitive decoder (encoding/json) could read
// either, a case-sensitive one reads the other, so the document has no
// single reading. Parse already refuses names that are exactly equal. The
// error names file, line and field path (as ObjectReader does).
func CheckFoldedNames(v *Value, file string) error {
	type item struct {
		v    *Value
		path string
	}
	stack := []item{{v, ""}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch it.v.Kind {
		case Array:
			for i := len(it.v.Arr) - 1; i >= 0; i-- {
				stack = append(stack, item{it.v.Arr[i], fmt.Sprintf("%s[%d]", it.path, i)})
			}
		case Object:
			var seen map[string]string
			if len(it.v.Obj) > 1 {
				seen = make(map[string]string, len(it.v.Obj))
			}
			for _, m := range it.v.Obj {
				field := m.Key
				if it.path != "" {
					field = it.path + "." + m.Key
				}
				if seen != nil {
					k := foldKey(m.Key)
					if first, dup := seen[k]; dup {
						return &Error{File: file, Line: m.KeyLine, Field: field,
							Msg: fmt.Sprintf("member name %q differs from %q only in letter case (a case-insensitive reader could take either)", m.Key, first)}
					}
					seen[k] = m.Key
				}
			}
			for i := len(it.v.Obj) - 1; i >= 0; i-- {
				m := it.v.Obj[i]
				field := m.Key
				if it.path != "" {
					field = it.path + "." + m.Key
				}
				stack = append(stack, item{m.Val, field})
			}
		}
	}
	return nil
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
