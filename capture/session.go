package capture

import (
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
)

// requester is what the scripted session needs of a live client, whatever
// its transport (StdioClient, HTTPClient): a request and its reply.
type requester interface {
	Request(method string, params json.RawMessage) (*mcp.Message, error)
}

// listTools follows nextCursor through every page of tools/list and returns
// the raw tool definitions in server order.
func listTools(c requester) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= maxToolPages {
			return all, exitcode.New(exitcode.Failure, fmt.Errorf("tools/list: more than %d pages", maxToolPages), "")
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			b, _ := json.Marshal(map[string]string{"cursor": cursor})
			params = b
		}
		m, err := c.Request(mcp.MethodToolsList, params)
		if err != nil {
			return all, err
		}
		if m.Error != nil {
			return all, exitcode.New(exitcode.Failure, serverError(mcp.MethodToolsList, m.Error), "")
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			return all, exitcode.New(exitcode.Failure, fmt.Errorf("tools/list result: %w", err), "")
		}
		all = append(all, res.Tools...)
		if res.NextCursor == nil || *res.NextCursor == "" {
			return all, nil
		}
		if seen[*res.NextCursor] {
			return all, exitcode.New(exitcode.Failure, fmt.Errorf("tools/list: server repeated cursor %q", *res.NextCursor), "")
		}
		seen[*res.NextCursor] = true
		cursor = *res.NextCursor
	}
}

// callTool calls a tool with the given arguments (a JSON object, or nil).
// A JSON-RPC error is returned as the message, not as an error: it is a
// recorded response.
func callTool(c requester, name string, args json.RawMessage) (*mcp.Message, error) {
	nb, _ := json.Marshal(name)
	params := `{"name":` + string(nb)
	if args != nil {
		params += `,"arguments":` + string(args)
	}
	params += "}"
	return c.Request(mcp.MethodToolsCall, json.RawMessage(params))
}
