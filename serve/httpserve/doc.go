// Package httpserve is the HTTP side of `witness serve`: `witness serve
// --listen` answers from a cassette over HTTP, as package serve does over
// stdio. It records nothing; the recording HTTP proxy is package
// httpproxy, and what the two share (the listener, the Origin check, the
// witness's own errors) is internal/httplocal.
//
// LoadReplay and Replay.Serve answer model-API requests from an HTTP
// cassette (package cassette, docs/formats/http-cassette.md): a request
// that matches a recorded one (method, path, canonical JSON body) gets the
// recorded answer, chunk by chunk as it was recorded.
//
// ServeMCP answers MCP clients over Streamable HTTP from the message
// cassette of one MCP session the proxy recorded (DIR/mcp/N), each client
// session replayed by its own serve.Script session.
//
// docs/design/http-proxy.md explains the choices.
package httpserve
