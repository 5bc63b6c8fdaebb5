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

// scopedSessionIRI returns the base IRI of a session scoped by a log
// identity (a joined graph, docs/design/causal-join.md):
// urn:witness:<session>;<scope>. A percent-encoded session never holds
// ';', so the two parts cannot be confused.
func scopedSessionIRI(session, scope string) string {
	return SessionIRI(session) + ";" + PctEncode(scope)
}

// sealIRI returns the IRI of the seal whose canonical JSON has sha256 digest.
func sealIRI(digest string) string { return iriPrefix + "seal:sha256:" + PctEncode(digest) }

// Node IRIs below take the session base returned by SessionIRI.

// agentIRI is the AI agent the session witnessed.
func agentIRI(base string) string { return base + "/agent" }

// serverIRI is the MCP server.
func serverIRI(base string) string { return base + "/server" }

// witnessIRI is the witness itself.
func witnessIRI(base string) string { return base + "/witness" }

// sessionNodeIRI is the capture session activity.
func sessionNodeIRI(base string) string { return base + "/session" }

// ToolIRI is the definition of tool name as the server listed it.
func ToolIRI(base, name string) string { return base + "/tool/" + PctEncode(name) }

// CallIRI is the tool-call activity of tool_call event id.
func CallIRI(base, id string) string { return base + "/call/" + PctEncode(id) }

// argsIRI is the arguments entity of tool_call event id.
func argsIRI(base, id string) string { return base + "/args/" + PctEncode(id) }

// ResultIRI is the result entity of tool_response event id.
func ResultIRI(base, id string) string { return base + "/result/" + PctEncode(id) }

// TurnIRI is the model-turn activity ended by model_output event id.
func TurnIRI(base, id string) string { return base + "/turn/" + PctEncode(id) }

// MsgIRI is the model message entity of model_input or model_output event id.
func MsgIRI(base, id string) string { return base + "/msg/" + PctEncode(id) }

// effectIRI is the external-effect entity of external_effect event id.
func effectIRI(base, id string) string { return base + "/effect/" + PctEncode(id) }

// noteIRI is the notification entity of notification event id.
func noteIRI(base, id string) string { return base + "/note/" + PctEncode(id) }

// ambiguousIRI is the entity of ambiguous event id (a wire line with more
// than one reading).
func ambiguousIRI(base, id string) string { return base + "/ambiguous/" + PctEncode(id) }

// messageIRI is the agent-message entity of message event id.
func messageIRI(base, id string) string { return base + "/message/" + PctEncode(id) }

// requestIRI is the request activity of mcp_request event id.
func requestIRI(base, id string) string { return base + "/request/" + PctEncode(id) }

// paramsIRI is the params entity of mcp_request event id.
func paramsIRI(base, id string) string { return base + "/params/" + PctEncode(id) }

// AnswerIRI is the answer entity of mcp_response event id.
func AnswerIRI(base, id string) string { return base + "/answer/" + PctEncode(id) }

// UserInputIRI is the entity of user_input event id (an elicitation
// answer).
func UserInputIRI(base, id string) string { return base + "/user-input/" + PctEncode(id) }

// userIRI is the user behind the host, to whom elicitation answers are
// attributed.
func userIRI(base string) string { return base + "/user" }

// assocIRI is the qualified association of activity (a call or turn IRI).
func assocIRI(activity string) string { return activity + "/assoc" }

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
