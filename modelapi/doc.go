// Package modelapi turns recorded model-API HTTP exchanges into the
// payloads of model_input and model_output events, as pure functions over
// bytes: no network, no processes. It reads OpenAI Chat Completions, OpenAI
// Responses and Anthropic Messages, streamed (server-sent events) and not.
//
// One call per recorded exchange: Read takes the request and the response
// as recorded and returns the Input and the Output, whatever the bytes are.
// The parts are there for a live proxy too: Detect names the API of a
// request, ParseRequest reads its body, and an Assembler is fed the
// response bytes as they pass (any chunking gives the same Output) and
// finished when the response ends or is cut.
//
// The reader is strict like the MCP side (docs/design/wire-reading.md): a
// body with duplicated or case-variant member names, invalid UTF-8, a lone
// surrogate escape or a number canonical JSON cannot carry exactly is
// ambiguous, and nothing read from it is chosen. Memory is bounded and time
// linear on hostile input (Limits); what a limit cut is reported, never
// dropped silently. The payload shapes are docs/formats/model-events.md.
package modelapi
