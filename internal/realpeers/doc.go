// Package realpeers holds the real-peer suite of issue 11: end-to-end tests
// in which real MCP hosts drive real MCP servers, directly and through the
// real `witness proxy` binary, and the recording is judged against what the
// hosts received.
//
// The hosts are testdata/peers/mcphost.mjs (a small host written with the
// official TypeScript SDK that answers sampling, elicitation and roots) and
// the MCP Inspector's CLI mode; the servers are the pinned server-everything
// and server-filesystem. The tests check that the host receives the same
// bytes through the proxy as directly, that the cassette holds exactly
// those bytes, that the event log has an event of the right kind for every
// exchange (docs/design/mcp-surface.md), that ten recordings with frozen
// time are byte-identical, and that `witness serve` replays the cassette to
// the same answers. docs/design/mcp-surface.md ("Real peers") lists the
// normalisations the comparisons need and why.
//
// The tests skip when testdata/peers/node_modules is absent (they fail
// instead when CI=true). The package has no non-test code beyond this
// comment.
package realpeers
