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
	"_meta (at any depth of params: progressToken, traceparent, tracestate, baggage, client info of 2026-07-28 requests)",
	"params.clientInfo of initialize (the host's name and version)",
}

// Key is what a request or notification is matched on: its method and its
// params without the volatile keys, members sorted, every number kept as
// its exact wire token (9007199254740993 and 9007199254740992 differ, and
// so do 1 and 1.0), strings by value.
type Key struct {
	Method string
	Params string // the exact-token JSON, "" when absent
}

func (k Key) String() string {
	if k.Params == "" {
		return k.Method
	}
	return k.Method + " " + k.Params
}

// KeyOf returns the match key of a request or notification. The params must
// be JSON (mcp.Parse checked them); an error names what is wrong.
func KeyOf(m *mcp.Message) (Key, error) {
	k := Key{Method: m.Method}
	if len(m.Params) == 0 {
		return k, nil
	}
	dec := json.NewDecoder(bytes.NewReader(m.Params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return k, fmt.Errorf("params: %w", err)
	}
	v = stripVolatile(v)
	if m.Method == "initialize" {
		if obj, ok := v.(map[string]any); ok {
			delete(obj, "clientInfo")
		}
	}
	if obj, ok := v.(map[string]any); ok && len(obj) == 0 {
		return k, nil // {} and no params ask the same
	}
	// encoding/json sorts map keys and writes a json.Number as its exact
	// token; canonical JSON would round numbers to doubles
	c, err := json.Marshal(v)
	if err != nil {
		return k, fmt.Errorf("params: %w", err)
	}
	k.Params = string(c)
	return k, nil
}

// stripVolatile removes every "_meta" member, at any depth.
func stripVolatile(v any) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "_meta")
		for k, c := range t {
			t[k] = stripVolatile(c)
		}
	case []any:
		for i, c := range t {
			t[i] = stripVolatile(c)
		}
	}
	return v
}
