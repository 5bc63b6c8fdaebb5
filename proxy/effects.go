package proxy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// EffectsFormat names the effects mapping file format (docs/formats/effects.md).
const EffectsFormat = "witness-effects"

// EffectOps are the effect operations a mapping may name (the op of
// eventlog.Effect).
var EffectOps = []string{"read", "write", "overwrite", "delete", "send", "payment", "exec", "other"}

// EffectRule says that a call of Tool has an external effect Op on the
// target found at Target (a JSON path into the call's arguments, in the one
// dialect of docs/formats/json-path.md, naming one value).
type EffectRule struct {
	Tool   string
	Op     string
	Target string // "" or a path such as $.path, $.files[0], $["dest dir"]
	path   jsonpath.Path
}

// EffectMap maps tool names to effect rules.
type EffectMap struct {
	Rules map[string]*EffectRule
}

// EffectsError reports a bad effects mapping file, naming file, line,
// column and field (the one positioned error of witness's readers).
type EffectsError = jsontree.Error

// ParseEffects reads an effects mapping file:
//
//	{"format": "witness-effects", "v": 1,
//	 "effects": [{"tool": "write_file", "op": "write", "target": "$.path"}, ...]}
//
// name is used in errors. Unknown fields, unknown ops, duplicate tools and
// bad paths are refused; every error is an *EffectsError.
func ParseEffects(data []byte, name string) (*EffectMap, error) {
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, err
	}
	at := func(v *jsontree.Value, field, format string, args ...any) error {
		return &EffectsError{File: name, Line: int64(v.Line), Col: v.Col, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if root.Kind != jsontree.Object {
		return nil, at(root, "", "an effects mapping is a JSON object")
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", root, &perr)
	if !r.Has("format") {
		return nil, at(root, "$.format", "missing (want %q)", EffectsFormat)
	}
	if format := r.String("format", true); perr == nil && format != EffectsFormat {
		return nil, at(root.Get("format"), "$.format", "is %q, want %q", format, EffectsFormat)
	}
	if !r.Has("v") {
		return nil, at(root, "$.v", "missing (want 1)")
	}
	if v := r.Int("v", true); perr == nil && v != 1 {
		return nil, at(root.Get("v"), "$.v", "unsupported version %d (this witness reads 1)", v)
	}
	m := &EffectMap{Rules: map[string]*EffectRule{}}
	r.Objects("effects", false, func(i int, o *jsontree.ObjectReader) {
		el := root.Get("effects").Arr[i]
		member := func(k string) *jsontree.Value { // the member k, or the rule when absent
			if v := el.Get(k); v != nil {
				return v
			}
			return el
		}
		field := jsonpath.Index("$.effects", i)
		tool := o.String("tool", true)
		op, hasOp := o.OptString("op")
		target, hasTarget := o.OptString("target")
		o.Done()
		if perr != nil {
			return
		}
		if tool == "" {
			perr = at(el, field+".tool", "missing")
			return
		}
		if !hasOp || !validOp(op) {
			got := "nothing"
			if hasOp {
				got = strconv.Quote(op)
			}
			perr = at(member("op"), field+".op", "got %s, want one of %s", got, strings.Join(EffectOps, ", "))
			return
		}
		rule := &EffectRule{Tool: tool, Op: op}
		if hasTarget {
			p, err := jsonpath.ParseSingular(target)
			if err != nil {
				perr = at(el.Get("target"), field+".target", "%v", err)
				return
			}
			rule.Target, rule.path = target, p
		}
		if _, dup := m.Rules[tool]; dup {
			perr = at(member("tool"), field+".tool", "tool %q has a rule already", tool)
			return
		}
		m.Rules[tool] = rule
	})
	r.Done()
	if perr != nil {
		return nil, perr
	}
	return m, nil
}

func validOp(op string) bool {
	for _, o := range EffectOps {
		if o == op {
			return true
		}
	}
	return false
}

// TargetOf evaluates the rule's target path in the call arguments. It
// returns the string value, or the compact JSON text of a non-string value
// (members in their order), and whether the path was found.
func (r *EffectRule) TargetOf(args json.RawMessage) (string, bool) {
	if r.Target == "" || len(args) == 0 {
		return "", false
	}
	v, err := jsontree.ParseWire(args, "arguments")
	if err != nil {
		return "", false
	}
	sel := v.Select(r.path)
	if len(sel) == 0 {
		return "", false
	}
	if sel[0].Kind == jsontree.String {
		return sel[0].Str, true
	}
	b, err := sel[0].AppendCompact(nil)
	if err != nil {
		return "", false
	}
	return string(b), true
}
