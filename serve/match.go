package serve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/mcp"
)

// VolatileKeys lists what matching ignores, and why: values a host changes
// from run to run without changing what it asks.
var VolatileKeys = []string{
	"params._meta, at the top of params only (progressToken, traceparent, tracestate, baggage, client info of 2026-07-28 requests); a _meta deeper down (in a tool's arguments) is data and counts",
	"params.clientInfo of initialize (the host's name and version)",
	"_meta at the top of the result of the host's answer to a server request (AnswerOf)",
}

// key is what a request or notification is matched on: its method and its
// params without the volatile keys, members sorted, every number kept as
// its exact wire token (9007199254740993 and 9007199254740992 differ, and
// so do 1 and 1.0), strings by value.
type key struct {
	Method string
	Params string // the exact-token JSON, "" when absent
}

func (k key) String() string {
	if k.Params == "" {
		return k.Method
	}
	return k.Method + " " + k.Params
}

// keyOf returns the match key of a request or notification. The params must
// be JSON (mcp.Parse checked them); an error names what is wrong.
func keyOf(m *mcp.Message) (key, error) {
	k := key{Method: m.Method}
	if len(m.Params) == 0 {
		return k, nil
	}
	v, err := decodeExact(m.Params)
	if err != nil {
		return k, fmt.Errorf("params: %w", err)
	}
	if obj, ok := v.(map[string]any); ok {
		delete(obj, "_meta") // the protocol's per-request metadata: volatile only here
		if m.Method == mcp.MethodInitialize {
			delete(obj, "clientInfo")
		}
	}
	if obj, ok := v.(map[string]any); ok && len(obj) == 0 {
		return k, nil // {} and no params ask the same
	}
	c, err := encodeExact(v)
	if err != nil {
		return k, fmt.Errorf("params: %w", err)
	}
	k.Params = c
	return k, nil
}

// answer is what a host's answer to a server request is matched on: which
// of result or error it carries, and that member's value without the
// volatile "_meta" at the top of a result, members sorted, numbers as their
// exact wire tokens (as in Key).
type answer struct {
	Member string // "result" or "error"
	Value  string // exact-token JSON
}

func (a answer) String() string { return a.Member + " " + a.Value }

// answerOf returns the match key of a response. Only "_meta" at the top of
// a result is volatile (the protocol puts per-run data there); everything
// else the host answered counts, "_meta" deeper down included.
func answerOf(m *mcp.Message) (answer, error) {
	a := answer{Member: "result"}
	raw := m.Result
	if m.Error != nil {
		a.Member, raw = "error", m.Error
	}
	if len(raw) == 0 {
		return a, fmt.Errorf("%s: missing", a.Member)
	}
	v, err := decodeExact(raw)
	if err != nil {
		return a, fmt.Errorf("%s: %w", a.Member, err)
	}
	if obj, ok := v.(map[string]any); ok && a.Member == "result" {
		delete(obj, "_meta")
	}
	if a.Value, err = encodeExact(v); err != nil {
		return a, fmt.Errorf("%s: %w", a.Member, err)
	}
	return a, nil
}

// decodeExact decodes JSON keeping every number as its wire token.
func decodeExact(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeExact writes v with members sorted: encoding/json sorts map keys
// and writes a json.Number as its exact token, where canonical JSON would
// round numbers to doubles.
func encodeExact(v any) (string, error) {
	c, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(c), nil
}
