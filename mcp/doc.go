// Package mcp owns the witness's own MCP stdio wire layer: newline-delimited
// JSON-RPC 2.0 framing that hands out each line's exact bytes, and message
// classification (request, notification, response, invalid) that never
// re-encodes a message. It deliberately does not use the go-sdk transport,
// whose codecs re-encode messages (docs/design/mcp-client.md).
package mcp

// Protocol versions the witness speaks, newest first. DefaultProtocol is the
// version the client pins in initialize unless told otherwise.
const DefaultProtocol = "2025-11-25"

// SupportedProtocols lists every MCP protocol version the witness accepts.
var SupportedProtocols = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Supported reports whether v is a protocol version the witness speaks.
func Supported(v string) bool {
	for _, s := range SupportedProtocols {
		if s == v {
			return true
		}
	}
	return false
}
