package seal

import (
	"fmt"

	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// readSurface reads the optional MCP surface members of a spec or seal
// (resources, prompts, sampling, elicitation), the same rules for both: a
// list of strings (each resource a valid ResourcePattern, each prompt a
// non-empty name, none twice) or a boolean; absent stays nil.
func readSurface(r *jsontree.ObjectReader, perr *error, name string) (resources, prompts []string, sampling, elicitation *bool) {
	resources = readList(r, perr, name, "resources", func(s string) string {
		if _, err := ParseResourcePattern(s); err != nil {
			return err.Error()
		}
		return ""
	})
	prompts = readList(r, perr, name, "prompts", func(s string) string {
		if s == "" {
			return "a prompt name must be non-empty"
		}
		return ""
	})
	readBool := func(key string) *bool {
		if !r.Has(key) {
			return nil
		}
		v := r.Bool(key, true)
		return &v
	}
	return resources, prompts, readBool("sampling"), readBool("elicitation")
}

// readList reads an optional array of strings, checking each element with
// check (which returns what is wrong, or ""). Absent: nil; present: a
// non-nil slice, empty for [].
func readList(r *jsontree.ObjectReader, perr *error, name, key string, check func(string) string) []string {
	if !r.Has(key) {
		return nil
	}
	list := r.Strings(key, true)
	if *perr != nil {
		return nil
	}
	v := r.Value(key)
	seen := map[string]bool{}
	for i, s := range list {
		msg := check(s)
		if msg == "" && seen[s] {
			msg = fmt.Sprintf("%q is listed twice", s)
		}
		seen[s] = true
		if msg != "" {
			el := v.Arr[i]
			*perr = &jsontree.Error{File: name, Line: int64(el.Line), Col: el.Col, Field: jsonpath.Index(jsonpath.Member("", key), i), Msg: msg}
			return nil
		}
	}
	return list
}
