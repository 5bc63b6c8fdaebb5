package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// EffectsFormat names the effects mapping file format (docs/formats/effects.md).
const EffectsFormat = "witness-effects"

// EffectOps are the effect operations a mapping may name (the op of
// eventlog.Effect).
var EffectOps = []string{"read", "write", "overwrite", "delete", "send", "payment", "exec", "other"}

// EffectRule says that a call of Tool has an external effect Op on the
// target found at Target (a JSON path into the call's arguments).
type EffectRule struct {
	Tool   string
	Op     string
	Target string // "" or a path such as $.path, $.files[0], $["dest dir"]
	path   []pathStep
}

// EffectMap maps tool names to effect rules.
type EffectMap struct {
	Rules map[string]*EffectRule
}

type pathStep struct {
	key   string
	index int
	isIdx bool
}

// EffectsError reports a bad effects mapping file, naming file, line and field.
type EffectsError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *EffectsError) Error() string {
	if le, ok := e.Err.(*jsonlimit.Error); ok && le.File != "" {
		return le.Error() // already names file, line and column
	}
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		s += ": field " + strconv.Quote(e.Field)
	}
	return s + ": " + e.Err.Error()
}

func (e *EffectsError) Unwrap() error { return e.Err }

// ParseEffects reads an effects mapping file:
//
//	{"format": "witness-effects", "v": 1,
//	 "effects": [{"tool": "write_file", "op": "write", "target": "$.path"}, ...]}
//
// name is used in errors. Unknown fields, unknown ops, duplicate tools and
// bad paths are refused.
func ParseEffects(data []byte, name string) (*EffectMap, error) {
	// nesting deeper than the one limit is refused first, in one pass
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		return nil, &EffectsError{File: name, Line: err.(*jsonlimit.Error).Line, Err: err}
	}
	fail := func(off int64, field string, err error) error {
		return &EffectsError{File: name, Line: lineAt(data, off), Field: field, Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fail(dec.InputOffset(), "", fmt.Errorf("not JSON: %w", err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fail(0, "", errors.New("an effects mapping is a JSON object"))
	}
	m := &EffectMap{Rules: map[string]*EffectRule{}}
	var format string
	var v int
	seen := map[string]bool{}
	for dec.More() {
		off := dec.InputOffset()
		kt, err := dec.Token()
		if err != nil {
			return nil, fail(off, "", fmt.Errorf("not JSON: %w", err))
		}
		key, _ := kt.(string)
		if seen[key] {
			return nil, fail(off, key, errors.New("appears twice"))
		}
		seen[key] = true
		switch key {
		case "format":
			if err := dec.Decode(&format); err != nil {
				return nil, fail(off, key, fmt.Errorf("must be a string: %v", err))
			}
			if format != EffectsFormat {
				return nil, fail(off, key, fmt.Errorf("is %q, want %q", format, EffectsFormat))
			}
		case "v":
			if err := dec.Decode(&v); err != nil {
				return nil, fail(off, key, fmt.Errorf("must be an integer: %v", err))
			}
			if v != 1 {
				return nil, fail(off, key, fmt.Errorf("unsupported version %d (this witness reads 1)", v))
			}
		case "effects":
			if err := parseRules(dec, m, fail); err != nil {
				return nil, err
			}
		default:
			return nil, fail(off, key, errors.New("unknown field (want format, v, effects)"))
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), "", fmt.Errorf("not JSON: %w", err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), "", errors.New("trailing data after the mapping"))
	}
	if !seen["format"] {
		return nil, fail(0, "format", fmt.Errorf("missing (want %q)", EffectsFormat))
	}
	if !seen["v"] {
		return nil, fail(0, "v", errors.New("missing (want 1)"))
	}
	return m, nil
}

func parseRules(dec *json.Decoder, m *EffectMap, fail func(int64, string, error) error) error {
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return fail(off, "effects", fmt.Errorf("not JSON: %w", err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fail(off, "effects", errors.New("must be an array of rules"))
	}
	for i := 0; dec.More(); i++ {
		off := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail(off, fmt.Sprintf("effects[%d]", i), fmt.Errorf("not JSON: %w", err))
		}
		var r struct {
			Tool   *string `json:"tool"`
			Op     *string `json:"op"`
			Target *string `json:"target"`
		}
		rd := json.NewDecoder(bytes.NewReader(raw))
		rd.DisallowUnknownFields()
		field := fmt.Sprintf("effects[%d]", i)
		if err := rd.Decode(&r); err != nil {
			return fail(off, field, fmt.Errorf("a rule is {\"tool\", \"op\", \"target\"}: %v", err))
		}
		if r.Tool == nil || *r.Tool == "" {
			return fail(off, field+".tool", errors.New("missing"))
		}
		if r.Op == nil || !validOp(*r.Op) {
			got := "nothing"
			if r.Op != nil {
				got = strconv.Quote(*r.Op)
			}
			return fail(off, field+".op", fmt.Errorf("got %s, want one of %s", got, strings.Join(EffectOps, ", ")))
		}
		rule := &EffectRule{Tool: *r.Tool, Op: *r.Op}
		if r.Target != nil {
			p, err := parsePath(*r.Target)
			if err != nil {
				return fail(off, field+".target", err)
			}
			rule.Target, rule.path = *r.Target, p
		}
		if _, dup := m.Rules[rule.Tool]; dup {
			return fail(off, field+".tool", fmt.Errorf("tool %q has a rule already", rule.Tool))
		}
		m.Rules[rule.Tool] = rule
	}
	if _, err := dec.Token(); err != nil {
		return fail(dec.InputOffset(), "effects", fmt.Errorf("not JSON: %w", err))
	}
	return nil
}

func validOp(op string) bool {
	for _, o := range EffectOps {
		if o == op {
			return true
		}
	}
	return false
}

// lineAt returns the 1-based line of the first non-blank, non-separator byte
// at or after off.
func lineAt(data []byte, off int64) int {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	if off >= int64(len(data)) && off > 0 {
		off = int64(len(data)) - 1
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// parsePath parses the JSON path subset of effect targets: $ followed by
// .name, ["name"] or [index] steps.
func parsePath(s string) ([]pathStep, error) {
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("path %q must start with $", s)
	}
	var steps []pathStep
	rest := s[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			if n == 0 {
				return nil, fmt.Errorf("path %q: empty name after '.'", s)
			}
			steps = append(steps, pathStep{key: rest[:n]})
			rest = rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if len(rest) > 1 && rest[1] == '"' {
				// a quoted name may contain ']': find the closing quote
				var name string
				dec := json.NewDecoder(strings.NewReader(rest[1:]))
				if err := dec.Decode(&name); err != nil {
					return nil, fmt.Errorf("path %q: bad quoted name: %v", s, err)
				}
				after := 1 + int(dec.InputOffset())
				if after >= len(rest) || rest[after] != ']' {
					return nil, fmt.Errorf("path %q: missing ']' after quoted name", s)
				}
				steps = append(steps, pathStep{key: name})
				rest = rest[after+1:]
				continue
			}
			if end < 0 {
				return nil, fmt.Errorf("path %q: missing ']'", s)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || rest[1] == '+' || rest[1] == '-' {
				return nil, fmt.Errorf("path %q: index %q is not a non-negative integer", s, rest[1:end])
			}
			steps = append(steps, pathStep{index: n, isIdx: true})
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("path %q: unexpected %q (want .name, [\"name\"] or [index])", s, rest[:1])
		}
	}
	return steps, nil
}

// TargetOf evaluates the rule's target path in the call arguments. It
// returns the string value, or the JSON text of a non-string value, and
// whether the path was found.
func (r *EffectRule) TargetOf(args json.RawMessage) (string, bool) {
	if r.Target == "" || len(args) == 0 {
		return "", false
	}
	cur := args
	for _, st := range r.path {
		if st.isIdx {
			var arr []json.RawMessage
			if json.Unmarshal(cur, &arr) != nil || st.index >= len(arr) {
				return "", false
			}
			cur = arr[st.index]
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return "", false
		}
		v, ok := obj[st.key]
		if !ok {
			return "", false
		}
		cur = v
	}
	var s string
	if json.Unmarshal(cur, &s) == nil {
		return s, true
	}
	return string(bytes.TrimSpace(cur)), true
}
