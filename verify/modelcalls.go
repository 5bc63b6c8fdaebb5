package verify

import (
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/eventlog"
)

// modelCalls holds the tool calls a model asked for to the seal (issue 31):
// the host may run a requested tool locally, where no MCP proxy sees it, so
// the request itself is judged, by the same rules as an MCP tools/call: a
// tool the seal does not list is unsealed-tool, a path argument outside the
// tool's scopes argument-out-of-scope. Each finding names the model turn
// (the model_output event) and the call's id; a sealed tool a model only
// asked for is not counted as used. Sampling answers (a server's request
// to the model) are the MCP side's.
func (c *checker) modelCalls(e *eventlog.Event, line int64) {
	if e.Method != "" || len(e.Payload) == 0 {
		return
	}
	var out struct {
		ToolCalls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     json.RawMessage `json:"input"`
		} `json:"tool_calls"`
	}
	if json.Unmarshal(e.Payload, &out) != nil {
		return
	}
	for _, tc := range out.ToolCalls {
		if tc.Name == "" {
			continue
		}
		note := fmt.Sprintf(" (asked for by the model in %s, call %q: the host may have run it where no MCP channel sees it)", e.ID, tc.ID)
		call := eventlog.Event{ID: e.ID, Tool: tc.Name, Payload: tc.Input}
		if len(call.Payload) == 0 && tc.Arguments != "" {
			call.Payload = json.RawMessage(tc.Arguments)
		}
		if _, ok := c.toolIndex[tc.Name]; !ok {
			c.add(Finding{
				Check: checkUnsealed, Code: "unsealed-tool", Severity: SevError, Class: classViolation,
				EventID: e.ID, Tool: tc.Name, SealClause: "tools", Line: line,
				Message: fmt.Sprintf("tool %q was requested by the model but is not listed in the seal (sealed: %s)%s", tc.Name, c.sealedNames(), note),
			})
			continue
		}
		c.argScopesNote(&call, line, note)
	}
}
