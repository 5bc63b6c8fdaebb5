package serve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
)

// VolatileKeys lists what matching ignores, and why: values a host changes
// from run to run without changing what it asks.
var VolatileKeys = []string{
	"_meta (at any depth of params: progressToken, traceparent, tracestate, baggage, client info of 2026-07-28 requests)",
	"params.clientInfo of initialize (the host's name and version)",
}

// Key is what a request or notification is matched on: its method and the
// canonical JSON of its params without the volatile keys.
type Key struct {
	Method string
	Params string // canonical JSON, "" when absent
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
	c, err := canon.Marshal(v)
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
