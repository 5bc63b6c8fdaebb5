// Package capture records what an agent does, as an event log in the
// format of package eventlog: the MCP stdio client and its process groups
// (Live, RunCapture, Dial) with its scenarios, the Deriver that turns
// cassette records into events (every JSON-RPC exchange in either
// direction, docs/design/mcp-surface.md), the Recorder with its five choke
// points and the MCP request kinds, and AppendLog
// (`witness capture append`), redaction, and the import of
// agent-trace-witness 0.1.0 logs.
//
// Analysis packages (graph, verify, replay, firewall) never import capture:
// they read events.jsonl through eventlog.
package capture
