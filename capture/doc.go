// Package capture owns what the witness records: the event log format (its
// envelope, hash chain and signed end), the MCP stdio client, the transparent
// proxy, the replaying server, the five choke points of the Recorder API,
// redaction and the import of agent-trace-witness 0.1.0 logs.
package capture
