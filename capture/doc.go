// Package capture records what an agent does: the MCP clients behind one
// Transport (the stdio client and its process groups, the Streamable HTTP
// client of capture --url), the live session (Live, RunCapture, Dial) with
// its scenarios, whose cassette feeds a derive.Deriver so that the event
// log is derived from exactly the recorded bytes.
//
// Analysis packages (graph, verify, replay, firewall) never import capture:
// they read events.jsonl through eventlog, and their tests build fixtures
// with package derive.
package capture
