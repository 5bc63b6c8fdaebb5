// Package proxy owns `witness proxy`: a transparent MCP stdio proxy that a
// real MCP host starts as its server command. It forwards bytes unchanged in
// both directions, passes the server's stderr through, propagates EOF,
// signals and the exit status, and records the session on the side: the
// exact wire lines in a cassette (package cassette) and the events derived
// from them (tool calls and responses paired by exact JSON-RPC id,
// notifications, external effects) in an event log (package capture).
//
// Recording never alters forwarding, and nothing is forwarded before it is
// recorded: each stream writes a line to the cassette, then forwards it;
// events are derived from the recorded lines off the forwarding path. See
// docs/design/proxy.md.
package proxy
