package verify

// codeInfo describes a finding code for SARIF rules and the docs.
type codeInfo struct {
	Short string
	Help  string
}

// codes describes every finding code verify produces. docs/design/verdicts.md
// lists the same table; TestCodesDocumented keeps them in step.
var codes = map[string]codeInfo{
	"seal-invalid":            {"The seal is malformed or its signature does not verify", "The seal file (or its DSSE envelope) was altered, or signed by a revoked key. Nothing the seal says can be relied on."},
	"seal-unauthenticated":    {"The seal cannot be checked with the keys given", "Its signature (or every signature of its DSSE envelope) is by a key neither the keyring nor the trust file holds: nothing shows it was altered, but nothing shows it was not. Give the keyring or trust file that holds the signing key (--keyring, --trust)."},
	"seal-quorum-not-met":     {"Fewer trusted keys signed the seal than the quorum requires", "Collect more cosignatures (witness cosign) or lower --quorum if the policy allows."},
	"log-parse":               {"A line of the event log is not a valid event", "The log was edited by hand or corrupted: this line is not an event witness wrote."},
	"log-canonical":           {"A line of the event log is not in canonical form", "The line's bytes were changed after capture (witness writes canonical JSON only)."},
	"log-chain":               {"A line does not chain to the previous line", "prev is not the sha256 of the previous line: a line was edited, inserted, removed or reordered."},
	"log-seq":                 {"Sequence numbers do not follow each other", "Lines were deleted, inserted or reordered."},
	"log-id":                  {"An event id does not match its sequence number", "The line was edited."},
	"log-session":             {"A line belongs to another session", "Lines from another log were spliced in, or the header was edited."},
	"log-header":              {"The session header is missing, repeated or misplaced", "The log does not start with its session_start, or has a second one."},
	"log-payload-hash":        {"A payload does not match its payload_sha256", "The recorded arguments, result or content were edited after capture."},
	"log-link":                {"A causal link names no earlier event of the right kind", "The call, input or cause link was edited or points forward."},
	"log-end":                 {"The session_end count or head does not match the log", "Lines were added, removed or edited before the end."},
	"log-signature":           {"A session_end signature does not verify", "The end line was altered or signed with another key."},
	"log-unsigned":            {"The session_end carries no signature", "Without a trusted signature on the end, a cut-off tail re-ended by someone else cannot be ruled out. Capture with a keyring, or pass --allow-unsigned to accept it."},
	"log-untrusted":           {"The session_end is signed only by keys the keyring does not hold", "Cannot check (unauthenticated): give the keyring or trust file that holds the signing key (--keyring, --trust), or pass --allow-unsigned. An end signed only by revoked keys counts as not signed (incomplete)."},
	"log-partial":             {"The event log ends in a partial line", "The capture stopped in the middle of a write, or the file was truncated."},
	"log-no-end":              {"The event log has no session_end line", "The capture was cut off or the end was removed: what came after the last line is unknown."},
	"log-empty":               {"The event log is empty", "Nothing was captured, or the file was emptied."},
	"log-failure":             {"A session_end records that the recording failed", "The capture or proxy could not record the whole session (a capture error, an abandoned recording, a server that died mid-call, a line over the limit): the lines present are intact, what came after the failure is missing. The message gives the reason the end records."},
	"session-id-collision":    {"The upstream gave this session's id to another client too", "An MCP server over HTTP handed the Mcp-Session-Id of this session to another client (a second initialize answered with an id in use): it serves both clients as one session, so what it answered this client may depend on what the other asked. The witness proxy kept each client's messages in a log of its own (it gave the later client an alias of the id); the log is intact but the session it records is not this client's alone. Over HTTP+SSE the clients share one endpoint and cannot be told apart: their requests are in one log, ambiguous as to client. Never verified (incomplete)."},
	"findings-dropped":        {"More findings of one code than are listed", "Only the first 1000 findings of each code are listed; the count of the others is in the message."},
	"log-findings-dropped":    {"More chain findings than are listed", "Only the first chain findings are listed; fix those first."},
	"graph-invalid":           {"The graph file is not a valid witness graph", "The graph was edited or is not a document 'witness graph' wrote."},
	"graph-dangling":          {"A graph node refers to a node the graph does not hold", "'witness graph' writes every node it names: a node was removed or an IRI changed after the graph was written."},
	"graph-unauthenticated":   {"A graph alone cannot be authenticated", "A graph carries no hash chain or signed end. Verify it together with the event log it was made from (--graph G --events E): then it must be exactly that log's graph."},
	"graph-mismatch":          {"The graph is not the graph of the event log given with it", "Its canonical digest differs from the digest of the graph 'witness graph' derives from the log: it was edited, made from another log, or carries an overlay (--firewall-audit)."},
	"seal-mismatch":           {"The events were captured under another seal", "Verify against the seal named in the session header, or re-capture under this seal."},
	"seal-ref-mismatch":       {"Imported events carry the seal_ref of another seal", "agent-trace-witness 0.1.0 never checked seal_ref; the events were produced under another seal."},
	"unsealed-tool":           {"A tool was used that the seal does not list", "The agent called a tool it was not sealed for."},
	"sealed-tool-unused":      {"A sealed tool was never used", "Informational: the seal may grant more than the agent needs."},
	"argument-out-of-scope":   {"A path argument is outside the tool's sealed scopes", "The call touched a path the seal does not grant (after resolving . and ..)."},
	"effect-out-of-scope":     {"An external effect is outside the tool's sealed scopes", "The tool read or wrote a path the seal does not grant for that operation."},
	"scope-not-checkable":     {"A scope or some calls could not be checked", "The scope is not a read:/write: path glob, or the calls carry no path argument or no recorded arguments."},
	"system-prompt-drift":     {"The system prompt given to the model differs from the sealed hash", "The agent ran with another system prompt than the one sealed."},
	"tool-definition-drift":   {"The server's tool definition differs from the one pinned in the seal", "The MCP server changed the tool (a rug pull) after the seal was made."},
	"pinned-tool-not-listed":  {"A tool pinned in the seal was not listed by the server", "The server's tool surface changed since the seal was made."},
	"tools-list-changed":      {"The server announced a tool list change during the session", "Definitions after this point were not pinned at session start."},
	"ambiguous-wire-line":     {"A wire line has more than one reading", "The host or server sent a line (duplicated or case-variant member names, a batch, several values, a number or string canonical JSON cannot carry exactly) that a peer could act on otherwise than the witness reads it. Each reading is checked against the seal; the session cannot be verified."},
	"resource-outside-seal":   {"A resource was read outside the sealed URI patterns", "The agent read a resource (resources/read) whose URI no pattern of the seal's resources matches, or whose URI cannot be placed (an encoded slash, user info, a backslash…): the witness fails closed."},
	"subscribe-outside-seal":  {"A resource subscription is outside the sealed URI patterns", "The agent subscribed (resources/subscribe) to a resource whose URI no pattern of the seal's resources matches."},
	"prompt-outside-seal":     {"A prompt was got that the seal does not list", "The agent got a prompt (prompts/get) whose name is not in the seal's prompts."},
	"sampling-not-allowed":    {"The host sampled the model for the server, and the seal does not allow sampling", "The host answered a server's sampling/createMessage request with a result: the model ran on the server's messages. A seal with sampling false wants such requests refused (a JSON-RPC error)."},
	"elicitation-not-allowed": {"The host asked the user for the server, and the seal does not allow elicitation", "The host answered a server's elicitation/create request (accept, decline or cancel): the user was asked. A seal with elicitation false wants such requests refused (a JSON-RPC error)."},
	"unrequested-tool-call":   {"An MCP tool call no model output asked for", "In the joined logs of a run, no model tool call has this call's name and canonically equal arguments: the agent acted on its own, or a model channel was not witnessed (docs/design/causal-join.md)."},
	"model-call-not-executed": {"A tool call the model asked for was never executed", "Notice: no MCP tools/call with the name and canonically equal arguments followed the model output; the agent declined it, failed before sending it, or ran it on a channel that was not witnessed."},
	"ambiguous-join":          {"A tool call matches several candidates by content", "Notice: the join records the candidates and guesses none (the same call asked for twice with equal arguments, or executed twice); the chain through it is not followed."},
	"injection-provenance":    {"A destructive or unsealed action is causally downstream of untrusted content", "A tool result or resource the seal marks untrusted reached a model input, and a later turn asked for this action (destructiveHint true, or a tool the seal does not list): possible prompt injection. The chain printed with it leads from the action back to the untrusted source."},
	"not-checkable":           {"A check could not run on this evidence", "The evidence lacks what the check needs; the reason is in the message."},
}
