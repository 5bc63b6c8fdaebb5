package capture

import (
	"encoding/json"

	"github.com/agent-trace-witness/witness/mcp"
)

// Transport is the client side of one MCP session, whatever carries it: the
// stdio client (StdioClient, a server process) and the Streamable HTTP
// client (HTTPClient, capture --url) both implement it, and Live drives a
// session through it alone. Every message goes to the session's cassette
// before it is sent or acted on.
type Transport interface {
	// Initialize runs the initialize handshake and returns the result.
	Initialize() (json.RawMessage, error)
	// Initialized is the initialize result (nil before Initialize).
	Initialized() json.RawMessage
	// Request sends a request and waits for its answer.
	Request(method string, params json.RawMessage) (*mcp.Message, error)
	// CallTool calls a tool (tools/call).
	CallTool(name string, args json.RawMessage) (*mcp.Message, error)
	// ListTools reads every page of tools/list.
	ListTools() ([]json.RawMessage, error)
	// Close ends the session and says how.
	Close() Shutdown
}

var (
	_ Transport = (*stdioClient)(nil)
	_ Transport = (*httpClient)(nil)
)

// Initialized implements Transport.
func (c *stdioClient) Initialized() json.RawMessage { return c.InitializeResult }

// Initialized implements Transport.
func (c *httpClient) Initialized() json.RawMessage { return c.InitializeResult }

// start makes t the session's transport, runs the handshake and lists the
// tools; on an error the session is closed and its log finished.
func (l *Live) start(t Transport) (*Live, error) {
	l.Transport = t
	if _, err := t.Initialize(); err != nil {
		return nil, l.closeWith(err)
	}
	tools, err := t.ListTools()
	l.Tools = tools
	if err != nil {
		return nil, l.closeWith(err)
	}
	return l, nil
}
