// Package cassette owns the witness cassette: a versioned JSONL recording of
// every byte that crossed an MCP stdio boundary (client to server, server to
// client, server stderr), line by line and untouched, with monotonic
// sequence numbers and per-direction byte offsets, plus the lifecycle of the
// server process. docs/formats/cassette.md documents the format.
package cassette
