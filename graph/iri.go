package graph

import (
	"unicode/utf8"
)

// IRI scheme of the nodes minted from an event log (docs/formats/graph.md):
//
//	urn:witness:<session>/<kind>[/<event id>][/assoc]
//
// with <session>, <event id> and tool names percent-encoded (every byte
// outside A-Z a-z 0-9 - . _ ~ becomes %XX, upper-case hex). The seal, shared
// by every session it governs, is named by its digest: urn:witness:seal:sha256:<hex>.
const iriPrefix = "urn:witness:"

// SessionIRI returns the base IRI of a session, without a trailing slash.
func SessionIRI(session string) string { return iriPrefix + PctEncode(session) }

// ScopedSessionIRI returns the base IRI of a session scoped by a log
// identity (a joined graph, docs/design/causal-join.md):
// urn:witness:<session>;<scope>. A percent-encoded session never holds
// ';', so the two parts cannot be confused.
func ScopedSessionIRI(session, scope string) string {
	return SessionIRI(session) + ";" + PctEncode(scope)
}

// SealIRI returns the IRI of the seal whose canonical JSON has sha256 digest.
func SealIRI(digest string) string { return iriPrefix + "seal:sha256:" + PctEncode(digest) }

// Node IRIs below take the session base returned by SessionIRI.

// AgentIRI is the AI agent the session witnessed.
func AgentIRI(base string) string { return base + "/agent" }

// ServerIRI is the MCP server.
func ServerIRI(base string) string { return base + "/server" }

// WitnessIRI is the witness itself.
func WitnessIRI(base string) string { return base + "/witness" }

// SessionNodeIRI is the capture session activity.
func SessionNodeIRI(base string) string { return base + "/session" }

// ToolIRI is the definition of tool name as the server listed it.
func ToolIRI(base, name string) string { return base + "/tool/" + PctEncode(name) }

// CallIRI is the tool-call activity of tool_call event id.
func CallIRI(base, id string) string { return base + "/call/" + PctEncode(id) }

// ArgsIRI is the arguments entity of tool_call event id.
func ArgsIRI(base, id string) string { return base + "/args/" + PctEncode(id) }

// ResultIRI is the result entity of tool_response event id.
func ResultIRI(base, id string) string { return base + "/result/" + PctEncode(id) }

// TurnIRI is the model-turn activity ended by model_output event id.
func TurnIRI(base, id string) string { return base + "/turn/" + PctEncode(id) }

// MsgIRI is the model message entity of model_input or model_output event id.
func MsgIRI(base, id string) string { return base + "/msg/" + PctEncode(id) }

// EffectIRI is the external-effect entity of external_effect event id.
func EffectIRI(base, id string) string { return base + "/effect/" + PctEncode(id) }

// NoteIRI is the notification entity of notification event id.
func NoteIRI(base, id string) string { return base + "/note/" + PctEncode(id) }

// AmbiguousIRI is the entity of ambiguous event id (a wire line with more
// than one reading).
func AmbiguousIRI(base, id string) string { return base + "/ambiguous/" + PctEncode(id) }

// MessageIRI is the agent-message entity of message event id.
func MessageIRI(base, id string) string { return base + "/message/" + PctEncode(id) }

// RequestIRI is the request activity of mcp_request event id.
func RequestIRI(base, id string) string { return base + "/request/" + PctEncode(id) }

// ParamsIRI is the params entity of mcp_request event id.
func ParamsIRI(base, id string) string { return base + "/params/" + PctEncode(id) }

// AnswerIRI is the answer entity of mcp_response event id.
func AnswerIRI(base, id string) string { return base + "/answer/" + PctEncode(id) }

// UserInputIRI is the entity of user_input event id (an elicitation
// answer).
func UserInputIRI(base, id string) string { return base + "/user-input/" + PctEncode(id) }

// UserIRI is the user behind the host, to whom elicitation answers are
// attributed.
func UserIRI(base string) string { return base + "/user" }

// AssocIRI is the qualified association of activity (a call or turn IRI).
func AssocIRI(activity string) string { return activity + "/assoc" }

// PctEncode percent-encodes every byte of s outside the RFC 3986 unreserved
// set, with upper-case hex.
func PctEncode(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)*3)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
