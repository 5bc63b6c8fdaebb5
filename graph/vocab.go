package graph

// Namespaces of the terms the graph uses.
const (
	NSProv    = "http://www.w3.org/ns/prov#"
	nsrdf     = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsxsd     = "http://www.w3.org/2001/XMLSchema#"
	NSWitness = "https://w3id.org/agent-trace-witness/ns#"
	// nsOtel holds one term per OpenTelemetry semantic-convention attribute:
	// the attribute name appended verbatim (otel:gen_ai.tool.name).
	nsOtel = "https://w3id.org/agent-trace-witness/otel#"
)

// RDFType is rdf:type, the predicate of Node.Types.
const RDFType = nsrdf + "type"

// Datatypes of literals.
const (
	xsdString   = nsxsd + "string"
	xsdDateTime = nsxsd + "dateTime"
	XSDInteger  = nsxsd + "integer"
	xsdBoolean  = nsxsd + "boolean"
)

// PROV-O classes.
const (
	ProvEntity        = NSProv + "Entity"
	ProvActivity      = NSProv + "Activity"
	ProvAgent         = NSProv + "Agent"
	ProvSoftwareAgent = NSProv + "SoftwareAgent"
	ProvPlan          = NSProv + "Plan"
	ProvAssociation   = NSProv + "Association"
	provPerson        = NSProv + "Person"
)

// PROV-O properties.
const (
	ProvUsed                 = NSProv + "used"           // Activity → Entity
	ProvWasGeneratedBy       = NSProv + "wasGeneratedBy" // Entity → Activity
	provWasAssociatedWith    = NSProv + "wasAssociatedWith"
	ProvWasInformedBy        = NSProv + "wasInformedBy" // Activity → Activity
	ProvWasDerivedFrom       = NSProv + "wasDerivedFrom"
	ProvWasInfluencedBy      = NSProv + "wasInfluencedBy" // anything → anything: the general dependency
	provWasAttributedTo      = NSProv + "wasAttributedTo"
	provQualifiedAssociation = NSProv + "qualifiedAssociation"
	provAgentProp            = NSProv + "agent" // Association → Agent
	provHadPlan              = NSProv + "hadPlan"
	provStartedAtTime        = NSProv + "startedAtTime"
	provEndedAtTime          = NSProv + "endedAtTime"
	ProvGeneratedAtTime      = NSProv + "generatedAtTime"
	ProvValue                = NSProv + "value"
)

// Witness classes (subclasses of the PROV classes named in the comment).
const (
	WCaptureSession = NSWitness + "CaptureSession" // prov:Activity: the witnessed session
	WToolCall       = NSWitness + "ToolCall"       // prov:Activity
	WModelTurn      = NSWitness + "ModelTurn"      // prov:Activity
	waiAgent        = NSWitness + "AIAgent"        // prov:SoftwareAgent
	wmcpServer      = NSWitness + "MCPServer"      // prov:SoftwareAgent
	wWitness        = NSWitness + "Witness"        // prov:SoftwareAgent
	WSeal           = NSWitness + "Seal"           // prov:Plan
	WToolDefinition = NSWitness + "ToolDefinition" // prov:Entity
	WArguments      = NSWitness + "Arguments"      // prov:Entity
	WResult         = NSWitness + "Result"         // prov:Entity
	WModelMessage   = NSWitness + "ModelMessage"   // prov:Entity
	WExternalEffect = NSWitness + "ExternalEffect" // prov:Entity
	WNotification   = NSWitness + "Notification"   // prov:Entity
	WAgentMessage   = NSWitness + "AgentMessage"   // prov:Entity
	WAmbiguousLine  = NSWitness + "AmbiguousLine"  // prov:Entity: a wire line with more than one reading

	// The MCP conversation beyond tools/call (docs/design/mcp-surface.md).
	WMCPRequest       = NSWitness + "MCPRequest"       // prov:Activity: a JSON-RPC request other than tools/call and sampling, either direction
	wResourceRead     = NSWitness + "ResourceRead"     // witness:MCPRequest of method resources/read
	wPromptGet        = NSWitness + "PromptGet"        // witness:MCPRequest of method prompts/get
	wElicitation      = NSWitness + "Elicitation"      // witness:MCPRequest of method elicitation/create (server to host)
	WRequestParams    = NSWitness + "RequestParams"    // prov:Entity: a request's params
	WMCPAnswer        = NSWitness + "MCPAnswer"        // prov:Entity: the answer (result or error) to a witness:MCPRequest
	wResourceContents = NSWitness + "ResourceContents" // witness:MCPAnswer: the contents a resources/read returned
	wPromptMessages   = NSWitness + "PromptMessages"   // witness:MCPAnswer: the messages a prompts/get returned
	WUserInput        = NSWitness + "UserInput"        // prov:Entity: the user's answer to an elicitation
	wUser             = NSWitness + "User"             // prov:Person: the user behind the host
	wSamplingTurn     = NSWitness + "SamplingTurn"     // witness:ModelTurn observed on the wire: a server's sampling/createMessage and the host's answer
)

// Witness properties.
const (
	WEventID          = NSWitness + "eventId"          // the event id ("e12") of the node's event
	WSeq              = NSWitness + "seq"              // xsd:integer, the event's position in the log
	WSource           = NSWitness + "source"           // observed | reported | imported
	WSession          = NSWitness + "session"          // session id (on the session node)
	wPayloadSHA256    = NSWitness + "payloadSha256"    // sha256 hex of the payload's canonical JSON
	WRole             = NSWitness + "role"             // model message role
	wIsError          = NSWitness + "isError"          // xsd:boolean
	wrpcError         = NSWitness + "rpcError"         // xsd:boolean: the payload is a JSON-RPC error object
	WRPCIDJSON        = NSWitness + "rpcIdJson"        // the exact JSON-RPC id token
	WEffectOp         = NSWitness + "effectOp"         // read, write, delete, ...
	WEffectTarget     = NSWitness + "effectTarget"     // path, URL, recipient
	wEffectReason     = NSWitness + "effectReason"     // why the witness believes it happened
	WDefinitionSHA256 = NSWitness + "definitionSha256" // sha256 of a tool definition
	WAnnotations      = NSWitness + "annotations"      // canonical JSON of a tool definition's annotations
	wToolsSHA256      = NSWitness + "toolsSha256"      // sha256 of the server's tool list
	wServerName       = NSWitness + "serverName"
	wServerVersion    = NSWitness + "serverVersion"
	wServerCommand    = NSWitness + "serverCommand"
	wServerArgv       = NSWitness + "serverArgv" // canonical JSON array of the server's arguments
	wWitnessVersion   = NSWitness + "witnessVersion"
	WSealDigest       = NSWitness + "sealDigest" // on the seal: sha256 of its canonical JSON
	WWitnessID        = NSWitness + "witnessId"  // on the seal: the seal's witness_id
	WBoundSeal        = NSWitness + "boundSeal"  // on the session: the seal digest the log header names
	WImportedFrom     = NSWitness + "importedFrom"
	wPairing          = NSWitness + "pairing"
	wNote             = NSWitness + "note"
	wRedactionRule    = NSWitness + "redactionRule"
	wEventCount       = NSWitness + "eventCount" // session_end count
	wChainHead        = NSWitness + "chainHead"  // session_end head
	wEndReason        = NSWitness + "endReason"
	wSignatureKeyID   = NSWitness + "signatureKeyId"
	WUnresolvedLink   = NSWitness + "unresolvedLink" // "call=e7": a causal link naming no earlier event of the right kind
	wRedacted         = NSWitness + "redacted"       // xsd:boolean: payload values were replaced by keyed hashes
	wLegacyFormat     = NSWitness + "legacyFormat"   // imported events: the foreign format
	wLegacyLine       = NSWitness + "legacyLine"     // imported events: 1-based line in the foreign file
	WLegacySealRef    = NSWitness + "legacySealRef"  // imported events: the line's seal_ref when it differs
	wLegacyUnsealed   = NSWitness + "legacyUnsealed"
	wLegacyOrphan     = NSWitness + "legacyOrphan" // imported events: nothing could be paired with it
	WDirection        = NSWitness + "direction"
	WConversation     = NSWitness + "conversation"
	WSender           = NSWitness + "sender"
	WRecipient        = NSWitness + "recipient"
	WText             = NSWitness + "text"
	WOperation        = NSWitness + "operation"
	WAuthorAgentID    = NSWitness + "authorAgentId"
	WPostID           = NSWitness + "postId"
	// WDuringCandidate: a server request (its activity, or the message of a
	// sampling request) → each client request that was open when it was
	// sent, when several were: one of them caused it, the witness does not
	// guess which. Not a dependency: replay reports it as ambiguous.
	WDuringCandidate = NSWitness + "duringCandidate"
	// WPossiblyInfluencedBy: a result or effect of one of those candidate
	// requests → the host's answer to that server request, when the answer
	// came first: the result may depend on it. Not a dependency either.
	WPossiblyInfluencedBy = NSWitness + "possiblyInfluencedBy"
	wElicitationAction    = NSWitness + "elicitationAction" // accept | decline | cancel: the user's answer to an elicitation
)

// OpenTelemetry GenAI / MCP / JSON-RPC attribute terms.
const (
	otelOperationName    = nsOtel + "gen_ai.operation.name" // execute_tool | chat
	OtelToolName         = nsOtel + "gen_ai.tool.name"
	OtelMCPMethodName    = nsOtel + "mcp.method.name"
	otelMCPProtocolVer   = nsOtel + "mcp.protocol.version"
	otelJSONRPCRequestID = nsOtel + "jsonrpc.request.id"
	otelErrorType        = nsOtel + "error.type"
	otelRPCStatusCode    = nsOtel + "rpc.response.status_code"
	OtelMCPResourceURI   = nsOtel + "mcp.resource.uri"      // resources/read, subscribe, unsubscribe: params.uri
	otelPromptName       = nsOtel + "gen_ai.prompt.name"    // prompts/get: params.name
	otelResponseModel    = nsOtel + "gen_ai.response.model" // sampling answer: result.model
)

// Prefixes of the embedded JSON-LD context, in the order they are tried when
// compacting an IRI. A prefix name is never a URI scheme the graph uses.
var prefixes = [...]struct{ name, ns string }{
	{"otel", nsOtel},
	{"prov", NSProv},
	{"rdf", nsrdf},
	{"witness", NSWitness},
	{"xsd", nsxsd},
}

// ContextJSON is the embedded JSON-LD context of every graph document, in
// canonical JSON. Only prefixes: values carry explicit @id / @type / @value,
// so no term coercion is needed to read them.
const ContextJSON = `{"otel":"` + nsOtel + `","prov":"` + NSProv + `","rdf":"` + nsrdf + `","witness":"` + NSWitness + `","xsd":"` + nsxsd + `"}`
