// Package wirediff is the differential wire-reading kit of issue 30
// (docs/design/wire-reading.md, "Differential reading"): one byte stream is
// read both by the witness and by the pinned real clients, and what each
// would act on is compared.
//
// The parts:
//
//   - Oracle drives testdata/peers/wireoracle.mjs, one long-lived Node 22
//     process in which the real clients read an answer: the openai SDK
//     (chat completions and responses, plain and with its stream
//     accumulators), @openai/agents' models (their own stream
//     accumulation), the Anthropic SDK (messages, plain and its
//     MessageStream) and the TypeScript MCP SDK's Client over Streamable
//     HTTP. Each call names the reader and the base URL to call.
//   - Upstream is a hostile HTTP server that answers with exact bytes: the
//     status line, headers and body of a Case, byte for byte.
//   - Corpus generates the cases: for each channel a well-formed answer and
//     its variants (framing, encodings, content types, ids, block indices,
//     names and arguments split across deltas, JSON arrays on SSE).
//   - Acted is what a reader would act on (the tool calls with their ids,
//     names and arguments, the text, the MCP result, or an error), with one
//     comparison for both sides.
//
// The tests (in this package's _test files) put the witness's recording
// proxy between the real client and the Upstream, read what the witness
// recorded and what verify says of it, and require: wherever the readings
// differ, the verdict is not verified.
package wirediff
