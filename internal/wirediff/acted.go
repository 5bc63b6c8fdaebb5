package wirediff

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// Acted is what a reader would act on from one answer.
type Acted struct {
	// Error is set when the reader refused the answer (the client threw,
	// the witness read an error or nothing): nothing else counts then.
	Error     string          `json:"error,omitempty"`
	Text      string          `json:"text"`
	ToolCalls []Call          `json:"tool_calls"`
	Result    json.RawMessage `json:"result,omitempty"` // MCP: the tools/call result
}

// Call is one tool call a model asked for.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Key is the comparable form of a: an error is only "error"; arguments and
// results are in canonical JSON when they parse (a client acts on the
// parsed value), as sent otherwise.
func (a Acted) Key() string {
	if a.Error != "" {
		return "error"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "text=%q", a.Text)
	for _, c := range a.ToolCalls {
		fmt.Fprintf(&b, " call{id=%q name=%q args=%s}", c.ID, c.Name, canonOr(c.Arguments))
	}
	if len(a.Result) > 0 {
		fmt.Fprintf(&b, " result=%s", canonOr(string(a.Result)))
	}
	return b.String()
}

func canonOr(s string) string {
	if c, err := canon.Transform([]byte(s)); err == nil {
		return string(c)
	}
	return fmt.Sprintf("%q", s)
}

// Same reports whether two readings act on the same things.
func Same(a, b Acted) bool { return a.Key() == b.Key() }
