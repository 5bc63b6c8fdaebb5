// Package jsonpath is witness's one JSON-path dialect (docs/formats/json-path.md):
// the paths users write in redaction rules (--redact), effects mappings
// (--effects) and firewall message mappings, and the paths every reader
// names in its errors.
//
// A path starts with $ (the root) and continues with steps:
//
//	.name        member "name" (any characters but '.' and '[')
//	["name"]     member "name", the name a JSON string (escapes allowed)
//	['name']     member "name", the name without ' inside
//	[3]          element 3 of an array (decimal, no sign)
//	.* or [*]    every member or element (a wildcard)
//	..step       the step applied at any depth (recursive descent)
//
// A singular path (no wildcard, no descent) names at most one value; effect
// targets and mapping fields must be singular.
package jsonpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Step is one selector of a path.
type Step struct {
	Descend  bool   // ".." before the selector: apply it at any depth
	Wildcard bool   // "*": every member or element
	Name     string // member name (when neither Wildcard nor IsIndex)
	Index    int    // array index when IsIndex
	IsIndex  bool
}

// Path is a parsed path.
type Path struct {
	Text  string // as written
	Steps []Step
}

// Singular reports whether p names at most one value (no wildcard, no
// recursive descent).
func (p Path) Singular() bool {
	for _, s := range p.Steps {
		if s.Descend || s.Wildcard {
			return false
		}
	}
	return true
}

// String returns the path as written.
func (p Path) String() string { return p.Text }

// Parse parses a path of the dialect. Errors name the path and what is
// wrong with it.
func Parse(s string) (Path, error) {
	if !strings.HasPrefix(s, "$") {
		return Path{}, fmt.Errorf("path %q must start with $", s)
	}
	p := Path{Text: s}
	i := 1
	for i < len(s) {
		var st Step
		switch {
		case strings.HasPrefix(s[i:], ".."):
			st.Descend = true
			i += 2
		case s[i] == '.':
			i++
		case s[i] == '[':
		default:
			return Path{}, fmt.Errorf("path %q: unexpected %q at offset %d (want .name, [\"name\"], [index] or ..)", s, s[i], i)
		}
		if i >= len(s) {
			return Path{}, fmt.Errorf("path %q ends after a dot", s)
		}
		switch {
		case s[i] == '*':
			st.Wildcard = true
			i++
		case s[i] == '[':
			n, err := bracket(s, i, &st)
			if err != nil {
				return Path{}, err
			}
			i += n
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			st.Name = s[i:j]
			if st.Name == "" {
				return Path{}, fmt.Errorf("path %q: empty member name at offset %d", s, i)
			}
			i = j
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

// bracket parses the [...] selector at s[i] into st and returns its length.
func bracket(s string, i int, st *Step) (int, error) {
	rest := s[i:]
	if len(rest) > 1 && rest[1] == '"' {
		// a JSON string: it may hold ']' and escapes
		dec := json.NewDecoder(strings.NewReader(rest[1:]))
		if err := dec.Decode(&st.Name); err != nil {
			return 0, fmt.Errorf("path %q: bad quoted name at offset %d: %v", s, i, err)
		}
		after := 1 + int(dec.InputOffset())
		if after >= len(rest) || rest[after] != ']' {
			return 0, fmt.Errorf("path %q: missing ']' after the quoted name at offset %d", s, i)
		}
		return after + 1, nil
	}
	if len(rest) > 1 && rest[1] == '\'' {
		end := strings.IndexByte(rest[2:], '\'')
		if end < 0 || 2+end+1 >= len(rest) || rest[2+end+1] != ']' {
			return 0, fmt.Errorf("path %q: a ['name'] at offset %d needs its closing ' and ] (no ' inside; use [\"name\"] with escapes)", s, i)
		}
		st.Name = rest[2 : 2+end]
		return 2 + end + 2, nil
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0, fmt.Errorf("path %q: unclosed [ at offset %d", s, i)
	}
	inner := rest[1:end]
	if inner == "*" {
		st.Wildcard = true
		return end + 1, nil
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 || inner == "" || inner[0] < '0' || inner[0] > '9' {
		return 0, fmt.Errorf("path %q: [%s] is not an index (a non-negative integer), * or a quoted name", s, inner)
	}
	st.Index, st.IsIndex = n, true
	return end + 1, nil
}

// ErrNotSingular is returned by ParseSingular for a path with a wildcard or
// a recursive descent.
var ErrNotSingular = errors.New("names many values (.. or *); this path must name one value")

// ParseSingular parses a path that must name at most one value.
func ParseSingular(s string) (Path, error) {
	p, err := Parse(s)
	if err != nil {
		return Path{}, err
	}
	if !p.Singular() {
		return Path{}, fmt.Errorf("path %q %w", s, ErrNotSingular)
	}
	return p, nil
}

// Lookup resolves a singular path in a value decoded by encoding/json
// (objects map[string]any, arrays []any). It reports whether the path was
// found; a non-singular path is never found.
func (p Path) Lookup(v any) (any, bool) {
	for _, st := range p.Steps {
		switch {
		case st.Descend || st.Wildcard:
			return nil, false
		case st.IsIndex:
			a, ok := v.([]any)
			if !ok || st.Index >= len(a) {
				return nil, false
			}
			v = a[st.Index]
		default:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[st.Name]; !ok {
				return nil, false
			}
		}
	}
	return v, true
}

// Member returns the path of member name under path (path "" is the root):
// .name when the name is plain, ["name"] otherwise, so that the result
// parses back to the same steps.
func Member(path, name string) string {
	if path == "" {
		path = "$"
	}
	if plain(name) {
		return path + "." + name
	}
	return path + "[" + quote(name) + "]"
}

// Index returns the path of element i under path (path "" is the root).
func Index(path string, i int) string {
	if path == "" {
		path = "$"
	}
	return path + "[" + strconv.Itoa(i) + "]"
}

// Rooted returns a path written relative to the root ("a.b[0]", "[1].x")
// with its leading $ ("$.a.b[0]", "$[1].x"); a path that has one, and "",
// are returned as they are.
func Rooted(p string) string {
	switch {
	case p == "" || p[0] == '$':
		return p
	case p[0] == '[':
		return "$" + p
	}
	return "$." + p
}

// plain reports whether name can be written as .name: letters, digits,
// '_', '-' and '/' only (the set the wire reader's paths use, so that both
// write a name the same way).
func plain(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c == '/' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// quote returns name as a JSON string, without HTML escaping.
func quote(name string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(name) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
