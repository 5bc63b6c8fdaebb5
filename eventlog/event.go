package eventlog

import (
	"encoding/json"
)

// FormatVersion is the version of the event log format written in every line's
// "v" field. docs/formats/events.md documents it.
const FormatVersion = 1

// Kind names what an event records.
type Kind string

// The event kinds. The five choke points come first, in 0.1.0's order.
const (
	KindToolCall       Kind = "tool_call"       // (a) tool call before MCP
	KindToolResponse   Kind = "tool_response"   // (b) MCP response
	KindModelInput     Kind = "model_input"     // (c) message to the model
	KindModelOutput    Kind = "model_output"    // (d) model response
	KindExternalEffect Kind = "external_effect" // (e) side effect of a tool
	KindNotification   Kind = "notification"    // a JSON-RPC notification (either direction) and witness observations of the wire
	KindMCPRequest     Kind = "mcp_request"     // a JSON-RPC request other than tools/call and sampling, either direction
	KindMCPResponse    Kind = "mcp_response"    // the answer (result or error) to an mcp_request
	KindUserInput      Kind = "user_input"      // what the user answered: the host's answer to elicitation/create
	KindMessage        Kind = "message"         // an application message between agents (firewall)
	KindAmbiguous      Kind = "ambiguous"       // a wire line with more than one reading (docs/design/wire-reading.md)
	KindSessionStart   Kind = "session_start"   // first line: the session header
	KindSessionEnd     Kind = "session_end"     // last line: count, chain head, signatures
)

// MethodUnmatchedResponse is the method of the notification the witness
// writes for an answer whose JSON-RPC id pairs with no open request (an
// id never asked, a second answer to one id, an answer to an ambiguous
// request). Its payload is {"id", "result" or "error"}.
const MethodUnmatchedResponse = "witness/unmatched-response"

// MethodSessionIDCollision is the method of the notification the HTTP proxy
// writes into every MCP session log whose session id the upstream handed to
// another client too (docs/design/mcp-http.md, "One session per client"):
// the upstream serves those clients as one session, so what it answered one
// may depend on what another asked. verify reports it as
// session-id-collision, never verified.
const MethodSessionIDCollision = "witness/session-id-collision"

// MethodMCPAfterEnd is the method of the notification the HTTP proxy
// writes into its own log for an exchange that carried the id of an MCP
// session whose log had already ended (docs/design/http-session-end.md):
// the exchange is in the HTTP cassette only, and verify never calls such
// a log verified.
const MethodMCPAfterEnd = "witness/mcp-after-end"

// Directions of wire messages (Event.Direction).
const (
	DirC2S = "c2s" // host (client) to server
	DirS2C = "s2c" // server to host
)

// ChokePoints are the five choke-point kinds in their canonical order.
var ChokePoints = []Kind{KindToolCall, KindToolResponse, KindModelInput, KindModelOutput, KindExternalEffect}

// Source says how the witness learned of an event.
type Source string

const (
	SourceObserved Source = "observed" // seen on the wire by the witness itself
	SourceReported Source = "reported" // reported by the agent or its framework (capture append, Recorder)
	SourceImported Source = "imported" // converted from another tool's log (atw-0.1.0)
)

// genesisPrev is the "prev" value of the first line of a log.
const genesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// Event is one line of the event log. Every line carries the common envelope
// (v, seq, id, session, kind, ts, source, prev); the other fields depend on the
// kind and are omitted when empty. Lines are written as canonical JSON
// (internal/canon), so identical events give identical bytes.
type Event struct {
	V       int    `json:"v"`
	Seq     int64  `json:"seq"`     // 0-based position in the log
	ID      string `json:"id"`      // stable id, unique within the session ("e<seq>")
	Session string `json:"session"` // session id, shared by every line of the log
	Kind    Kind   `json:"kind"`
	TS      string `json:"ts"` // RFC 3339 UTC, from ATW_WITNESS_TS when frozen
	Source  Source `json:"source"`
	Prev    string `json:"prev"` // sha256 hex of the previous line's bytes (without '\n'); GenesisPrev on the first

	// Causal links, by event id within the session.
	Call  string `json:"call,omitempty"`  // tool_response, external_effect: the tool_call it answers or was caused by; mcp_response, user_input: the mcp_request
	Input string `json:"input,omitempty"` // model_output: the model_input it answers
	Cause string `json:"cause,omitempty"` // tool_call: the model_output that asked for it; message: the event that produced it

	// Direction of a wire message: "c2s" (host to server) or "s2c".
	// Written on mcp_request, mcp_response, user_input, notification and
	// the model_input/model_output of a sampling exchange (events from
	// before this field have none: tool_call is c2s, tool_response s2c).
	Direction string `json:"direction,omitempty"`
	// During names the one client request (tool_call or mcp_request) that
	// was open when the server sent this request; DuringCandidates lists
	// them when several were open (an ambiguous link, never guessed).
	During           string   `json:"during,omitempty"`
	DuringCandidates []string `json:"during_candidates,omitempty"`
	// Concerns names the request (tool_call, mcp_request, or the
	// model_input of a sampling request) that a notification names by its
	// progress token or request id.
	Concerns string `json:"concerns,omitempty"`

	// Tool and protocol fields.
	Tool   string          `json:"tool,omitempty"`   // MCP tool name
	Method string          `json:"method,omitempty"` // JSON-RPC method (tools/call, notifications/tools/list_changed, ...)
	RPCID  json.RawMessage `json:"rpc_id,omitempty"` // the exact JSON-RPC id token (number or string) as on the wire

	// Payload is the real content: tool_call arguments, tool_response result
	// (or the JSON-RPC error object), model content, effect detail,
	// notification params. PayloadSHA256 is the sha256 of its canonical JSON.
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadSHA256 string          `json:"payload_sha256,omitempty"`
	IsError       *bool           `json:"is_error,omitempty"`  // tool_response: result.isError, or true for a JSON-RPC error
	RPCError      bool            `json:"rpc_error,omitempty"` // tool_response: the payload is a JSON-RPC error object, not a result
	Role          string          `json:"role,omitempty"`      // model_input, model_output

	Effect  *Effect  `json:"effect,omitempty"`  // external_effect
	Message *Message `json:"message,omitempty"` // message
	Wire    *WireRef `json:"wire,omitempty"`    // where the bytes are in the cassette

	Header *Header `json:"header,omitempty"` // session_start
	End    *End    `json:"end,omitempty"`    // session_end

	Legacy   *Legacy `json:"legacy,omitempty"`   // imported events: what the foreign log said
	Redacted bool    `json:"redacted,omitempty"` // values in the payload were replaced by keyed hashes

	// Numbers keeps the exact wire text of payload numbers whose canonical
	// form is another text for the same value (1.0, -0, 1E2), by JSON path
	// within the payload ("$.x", "$.items[0]"). A number whose value
	// canonical JSON cannot carry makes the line ambiguous instead.
	Numbers map[string]string `json:"numbers,omitempty"`
}

// Legacy keeps what an imported agent-trace-witness 0.1.0 line said that has
// no place in the envelope.
type Legacy struct {
	Format   string `json:"format"`             // "atw-0.1.0-events" or "atw-0.1.0-cassette"
	Line     int64  `json:"line"`               // 1-based line number in the imported file
	SealRef  string `json:"seal_ref,omitempty"` // the line's seal_ref when it differs from the header's seal digest
	Unsealed *bool  `json:"unsealed,omitempty"` // the line's unsealed flag (event logs only)
	Orphan   bool   `json:"orphan,omitempty"`   // no call (or input) could be paired with this event
}

// Effect describes an external effect of a tool.
type Effect struct {
	Op     string `json:"op"`               // read, write, overwrite, delete, send, payment, exec, other
	Target string `json:"target,omitempty"` // path, URL, recipient...
	Reason string `json:"reason,omitempty"` // why the witness believes it happened (annotation, mapping rule, reported)
}

// Message is an application message between agents (see docs/formats/firewall.md).
type Message struct {
	Direction     string   `json:"direction"` // incoming | outgoing
	Conversation  string   `json:"conversation"`
	Sender        string   `json:"sender"`
	Recipients    []string `json:"recipients,omitempty"`
	Text          string   `json:"text"`
	Operation     string   `json:"operation"` // direct, multicast, gather, all_gather, answer
	AuthorAgentID string   `json:"authorAgentId,omitempty"`
	PostID        string   `json:"postId,omitempty"`
	// OperationID names the collective operation a step belongs to
	// (request, result, operation_failed, close, claim, deadline, and a
	// gather's or all_gather's own post; optional on an answer).
	OperationID string `json:"operationId,omitempty"`
	// Deadline is the RFC 3339 deadline of a gather, all_gather or request.
	Deadline string `json:"deadline,omitempty"`
	// Answers are a result's lines, one per member.
	Answers []Answer `json:"answers,omitempty"`
	// Failure is an operation failure's reason (deadline-passed, ...).
	Failure string `json:"failure,omitempty"`
}

// Answer is one member's line of a collective result.
type Answer struct {
	Member  string `json:"member"`
	Outcome string `json:"outcome"` // answered | invalid | missing
	Text    string `json:"text,omitempty"`
	PostID  string `json:"postId,omitempty"`
}

// WireRef points at cassette records by their offsets.
type WireRef struct {
	Cassette string  `json:"cassette,omitempty"` // cassette file name, relative to the log
	Offsets  []int64 `json:"offsets"`            // byte offsets ("off") of the lines this event came from, in their direction's stream
	// X names the exchange of an HTTP cassette the event was read from
	// (its request records for a model_input, its response or error
	// records for the others); Offsets is then empty.
	X int64 `json:"x,omitempty"`
}

// Header is the payload of the session_start line.
type Header struct {
	Format         string      `json:"format"` // "witness-events"
	WitnessVersion string      `json:"witness_version"`
	Seal           *SealRef    `json:"seal,omitempty"`
	Server         *ServerInfo `json:"server,omitempty"`
	ImportedFrom   string      `json:"imported_from,omitempty"` // e.g. "atw-0.1.0"
	Pairing        string      `json:"pairing"`                 // "jsonrpc-id" or "earliest-open-same-tool" (imports)
	Redaction      *Redaction  `json:"redaction,omitempty"`
	Notes          []string    `json:"notes,omitempty"`
}

// SealRef binds a log to the seal that was its plan.
type SealRef struct {
	Digest    string `json:"digest"`               // sha256 hex of the seal's canonical JSON (seal_ref in 0.1.0 terms)
	WitnessID string `json:"witness_id,omitempty"` // the seal's witness_id (unknown for imports)
}

// ServerInfo identifies the MCP server and the session's protocol.
type ServerInfo struct {
	Name            string    `json:"name,omitempty"`
	Version         string    `json:"version,omitempty"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	Command         string    `json:"command,omitempty"`
	Args            []string  `json:"args,omitempty"`
	ToolsSHA256     string    `json:"tools_sha256,omitempty"` // sha256 of the canonical list of tool definitions (all pages)
	Tools           []ToolDef `json:"tools,omitempty"`        // tool definitions seen at session start, in server order
}

// ToolDef is one tool definition as the server listed it.
type ToolDef struct {
	Name        string          `json:"name"`
	SHA256      string          `json:"sha256"`                // sha256 of the canonical JSON of the whole definition object
	Annotations json.RawMessage `json:"annotations,omitempty"` // the definition's MCP annotations (destructiveHint, idempotentHint, ...)
}

// Redaction says which rules redacted values and how (never the key).
type Redaction struct {
	Rules []string `json:"rules"`
	KeyID string   `json:"key_id,omitempty"`
	Alg   string   `json:"alg,omitempty"` // "hmac-sha256"
}

// RedactTokenPrefix starts every value that redaction wrote: the prefix,
// then the 64 hex characters of the keyed hash (docs/formats/events.md).
const RedactTokenPrefix = "redacted:hmac-sha256:"

// RedactAlg is the keyed hash redaction uses (Redaction.Alg).
const RedactAlg = "hmac-sha256"

// End is the payload of the session_end line.
type End struct {
	Count  int64  `json:"count"` // number of lines before this one
	Head   string `json:"head"`  // sha256 of the line before this one (equals Prev)
	Reason string `json:"reason,omitempty"`
	// Failure, when set, says why the recording could not be completed
	// (a capture error, an abandoned recording, a server that died
	// mid-call, a line over the limit). A log whose end has a failure is
	// at best incomplete, whatever its signatures say.
	Failure    string      `json:"failure,omitempty"`
	Signatures []Signature `json:"signatures,omitempty"`
}

// Signature is a signature over EndMessage: the canonical JSON of the whole
// session_end line without its "signatures" member, which holds "count",
// "head" and "session" (and the line's envelope, ts and reason).
type Signature struct {
	KeyID string `json:"key_id"`
	Alg   string `json:"alg"` // hmac-sha256 | ed25519
	Sig   string `json:"sig"` // hex (hmac) or base64 (ed25519)
}
