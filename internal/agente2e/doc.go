// Package agente2e holds the real-agent suite of issue 15 (items 7 and 8):
// real agent frameworks, built on the pinned npm peers, run a prompt-
// injection story end to end while the witness records every channel.
//
// Each run starts the scripted model server (testdata/modelserver, script
// testdata/modelserver/scripts/agent-injection.json) behind `witness proxy
// --listen` (the model channel), server-everything over Streamable HTTP
// behind `witness proxy --listen` (an HTTP MCP channel), and an agent from
// testdata/agents whose stdio MCP server is `witness proxy --out DIR --
// node server-filesystem ROOT`. The model reads ROOT/inbox/poisoned.txt,
// whose text tells it to overwrite ROOT/precious.txt, and, like a model
// that falls for it, does. The agents are @openai/agents (OpenAI Responses
// API) and the Anthropic SDK's tool runner with the MCP TypeScript SDK's
// client (Anthropic Messages API); docs/design/agent-e2e.md says why these.
//
// The capture tests (TestAgentCapture*) check that each agent finished,
// that the write really happened, and that each channel's log verifies on
// its own with `witness verify --events`; ten runs under ATW_WITNESS_TS
// give the same bytes. The join tests (TestAgentInjection*) judge the
// three logs as one run: verify's injection-provenance finding, `witness
// why` from the overwrite back to the poisoned read, and replay without the
// read. With ATW_AGENT_RECORD=DIR the capture test copies one run's logs
// and seal to DIR (scripts/demo-record.sh: testdata/demo/agent).
//
// The tests skip when node or the peers are missing (they fail instead
// when CI=true). The package has no non-test code beyond this comment.
package agente2e
