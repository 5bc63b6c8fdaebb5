// Package derive turns recordings into events, in the format of package
// eventlog, with no process or socket: the Deriver that turns message
// cassette records into events (every JSON-RPC exchange in either
// direction, docs/design/mcp-surface.md), the HTTP exchange derivers
// (ModelDeriver), EventsFromCassette for either cassette format, the
// Recorder with its five choke points and the MCP request kinds,
// AppendLog (`witness capture append`), redaction, the import of
// agent-trace-witness 0.1.0 logs, and the file names of a recording folder
// (files.go).
//
// It sits in the formats layer: the recording packages (capture, proxy,
// httpproxy) feed it live, and analysis tests build their fixtures with
// it without linking the clients.
package derive
