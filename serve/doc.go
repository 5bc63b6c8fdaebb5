// Package serve owns `witness serve`: an MCP stdio server that answers from
// a cassette, so that CI can re-run an agent against recorded servers.
//
// Requests match on method and params with volatile keys ignored (see
// VolatileKeys); the incoming id is echoed into the recorded response bytes,
// which are otherwise replayed exactly; repeated identical requests replay
// their recorded answers in order; server notifications and requests are
// replayed where they occurred in the recording; a miss is a JSON-RPC error,
// the nearest recorded request and a diff on stderr, and exit status 4.
//
// A recorded request of the server to the host (sampling, elicitation,
// roots/list, ping) is sent and the host's answer awaited and matched (see
// AnswerOf) before the rest of its turn is replayed; a different answer, or
// none in time, is a miss: the host request waiting on it gets a JSON-RPC
// error instead of the recorded result.
//
// With Options.Report, every request matched or missed and every host
// answer is also written to a drift report (package drift) as it happens,
// and the report is finished whatever stops the session: the end of stdin,
// a signal on Options.Signals, a host that stops reading.
// See docs/design/serve.md.
package serve
