package graph

import (
	"encoding/json"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/mcp"
)

// The MCP conversation beyond tools/call (docs/design/mcp-surface.md,
// docs/formats/graph.md "Requests, server requests and their answers"):
// every request is an activity that uses its params and generates its
// answer; a server request made during a host request is informed by it;
// the host's answer to that server request (a sampling answer, an
// elicitation answer, a roots list) influences what the host request
// produced after it.

// methodSampling is the server request that is a model turn.
const methodSampling = mcp.MethodSamplingCreateMessage

// serverReq is what the mapper keeps of a server request with a during
// link, for its answer: the one host request open when it was sent, or the
// candidates when several were.
type serverReq struct {
	during string   // event id of the host request, "" when ambiguous
	cands  []string // event ids of the candidates (resolved ones only)
}

// answerRef is a host answer to a server request made during a host
// request: definite (during) or one of several candidates.
type answerRef struct {
	iri      string
	definite bool
}

// requestClass is the witness class of a request activity beside
// witness:MCPRequest, by method.
func requestClass(method string) string {
	switch method {
	case mcp.MethodResourcesRead:
		return wResourceRead
	case mcp.MethodPromptsGet:
		return wPromptGet
	case mcp.MethodElicitationCreate:
		return wElicitation
	}
	return ""
}

// answerClass is the witness class of a (non-error) answer beside
// witness:MCPAnswer, by the request's method.
func answerClass(method string) string {
	switch method {
	case mcp.MethodResourcesRead:
		return wResourceContents
	case mcp.MethodPromptsGet:
		return wPromptMessages
	}
	return ""
}

// payloadString returns the string member key of a JSON object payload,
// or "" when the payload is not an object within the nesting limit, lacks
// the member (by its exact name) or it is not a string. It describes; it
// never rejects an event.
func payloadString(payload json.RawMessage, key string) string {
	if len(payload) == 0 || jsonlimit.Check(payload) != nil {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		return ""
	}
	raw, ok := obj[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// sender is the agent a wire message is attributed to: the AI agent (the
// host) for c2s, the server otherwise (s2c, or no direction: events
// written before the field were server notifications).
func (m *mapper) sender(direction string) (string, error) {
	if direction == eventlog.DirC2S {
		return m.agent()
	}
	return m.server()
}

// user returns the user agent (a prov:Person), declared once.
func (m *mapper) user() (string, error) {
	u := userIRI(m.base)
	if m.declared[u] {
		return u, nil
	}
	m.declared[u] = true
	return u, m.typ(u, ProvAgent, provPerson, wUser)
}

// wireFields emits the JSON-RPC method, direction and id of an event
// observed on the MCP wire (each only when present).
func (m *mapper) wireFields(n string, e *eventlog.Event) error {
	return firstErr(
		m.addStr(n, OtelMCPMethodName, e.Method),
		m.addStr(n, WDirection, e.Direction),
		m.rpc(n, e),
	)
}

// requestNode is the primary node of an earlier request event: the call
// activity of a tool_call, the activity of an mcp_request, the message of
// a model_input (a sampling request).
func (m *mapper) requestNode(id string) string {
	info, _ := m.lookup(id)
	switch info.kind {
	case eventlog.KindToolCall:
		return CallIRI(m.base, id)
	case eventlog.KindMCPRequest:
		return requestIRI(m.base, id)
	case eventlog.KindModelInput:
		return MsgIRI(m.base, id)
	}
	return ""
}

// serverRequestLinks links a server request to the host request it was
// made during: its activity act (when it has one yet) prov:wasInformedBy
// that request, its content entity by contentPred (wasGeneratedBy for a
// request's params; wasInfluencedBy for a sampling request's message,
// since a generated model message is a turn's output). With several
// candidates, its primary node gets witness:duringCandidate to each,
// never a guess. Links naming no earlier host request are kept as
// witness:unresolvedLink.
func (m *mapper) serverRequestLinks(e *eventlog.Event, primary, act, content, contentPred string) error {
	var sr serverReq
	if e.During != "" {
		if _, ok := m.link(e, "during", e.During, eventlog.KindToolCall, eventlog.KindMCPRequest); ok {
			c := m.requestNode(e.During)
			if act != "" {
				if err := m.add(act, ProvWasInformedBy, Ref(c)); err != nil {
					return err
				}
			}
			if err := m.add(content, contentPred, Ref(c)); err != nil {
				return err
			}
			sr.during = strings.Clone(e.During) // kept: not a window on the line
		} else if err := m.unresolved(primary, "during", e.During); err != nil {
			return err
		}
	}
	for _, id := range e.DuringCandidates {
		if _, ok := m.link(e, "during_candidates", id, eventlog.KindToolCall, eventlog.KindMCPRequest); !ok {
			if err := m.unresolved(primary, "during_candidates", id); err != nil {
				return err
			}
			continue
		}
		if err := m.add(primary, WDuringCandidate, Ref(m.requestNode(id))); err != nil {
			return err
		}
		sr.cands = append(sr.cands, id)
	}
	if sr.during != "" || len(sr.cands) > 0 {
		m.serverReqs[strings.Clone(e.ID)] = sr
	}
	return nil
}

// answer records the host's answer (entity iri) to server request reqID:
// the results and effects its host request produces from now on depend on
// it (prov:wasInfluencedBy), or may (witness:possiblyInfluencedBy, for
// each candidate). A sampling turn (turn != "") is informed by the host
// request as the request's activity would be.
func (m *mapper) answer(reqID, iri, turn string) error {
	sr, ok := m.serverReqs[reqID]
	if !ok {
		return nil
	}
	iri = strings.Clone(iri) // kept: not a window on the mapper's strings (evStrings)
	if sr.during != "" {
		if turn != "" {
			if err := m.add(turn, ProvWasInformedBy, Ref(m.requestNode(sr.during))); err != nil {
				return err
			}
		}
		m.answered[sr.during] = append(m.answered[sr.during], answerRef{iri: iri, definite: true})
	}
	for _, c := range sr.cands {
		m.answered[c] = append(m.answered[c], answerRef{iri: iri})
	}
	return nil
}

// influences emits, on n (a result, answer or effect of host request
// call), the host answers given to server requests made during that
// request before n.
func (m *mapper) influences(n, call string) error {
	for _, a := range m.answered[call] {
		p := WPossiblyInfluencedBy
		if a.definite {
			p = ProvWasInfluencedBy
		}
		if err := m.add(n, p, Ref(a.iri)); err != nil {
			return err
		}
	}
	return nil
}

// concerns links a notification to the request it names (by progress
// token or request id): prov:wasInfluencedBy that request's primary node.
func (m *mapper) concerns(n string, e *eventlog.Event) error {
	if e.Concerns == "" {
		return nil
	}
	if _, ok := m.link(e, "concerns", e.Concerns, eventlog.KindToolCall, eventlog.KindMCPRequest, eventlog.KindModelInput); ok {
		return m.add(n, ProvWasInfluencedBy, Ref(m.requestNode(e.Concerns)))
	}
	return m.unresolved(n, "concerns", e.Concerns)
}

// sampling marks a model turn observed on the wire (a sampling answer):
// witness:SamplingTurn, its method, the model the host named, and an
// error answer as tool errors are.
func (m *mapper) sampling(e *eventlog.Event, turn, out string) error {
	if err := m.responseError(out, e); err != nil {
		return err
	}
	if e.Method != methodSampling {
		return nil
	}
	if err := firstErr(m.typ(turn, wSamplingTurn), m.add(turn, OtelMCPMethodName, Str(e.Method))); err != nil {
		return err
	}
	if e.RPCError {
		return nil
	}
	return m.addStr(out, otelResponseModel, payloadString(e.Payload, "model"))
}

// mcpRequest: a JSON-RPC request other than tools/call and sampling, in
// either direction: an activity associated with the agent (under the seal)
// and the server, using its params (attributed to the side that sent
// them); a server request is linked to the host request it was made
// during.
func (m *mapper) mcpRequest(e *eventlog.Event, dt Term) error {
	b := m.base
	act := requestIRI(b, e.ID)
	params := paramsIRI(b, e.ID)
	by, err := m.sender(e.Direction)
	if err != nil {
		return err
	}
	srv, err := m.server()
	if err != nil {
		return err
	}
	types := []string{ProvActivity, WMCPRequest}
	if c := requestClass(e.Method); c != "" {
		types = append(types, c)
	}
	if err := firstErr(
		m.typ(act, types...),
		m.envelope(act, e),
		m.add(act, provStartedAtTime, dt),
		m.wireFields(act, e),
		m.associate(act),
		m.add(act, provWasAssociatedWith, Ref(srv)),
		m.add(act, ProvUsed, Ref(params)),
		m.typ(params, ProvEntity, WRequestParams),
		m.add(params, provWasAttributedTo, Ref(by)),
		m.add(params, ProvGeneratedAtTime, dt),
		m.payload(params, e),
		m.requestTarget(act, e),
	); err != nil {
		return err
	}
	return m.serverRequestLinks(e, act, act, params, ProvWasGeneratedBy)
}

// requestTarget names what a request is about: the resource URI of
// resources/read, subscribe and unsubscribe, the prompt of prompts/get.
func (m *mapper) requestTarget(act string, e *eventlog.Event) error {
	switch e.Method {
	case mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		return m.addStr(act, OtelMCPResourceURI, payloadString(e.Payload, "uri"))
	case mcp.MethodPromptsGet:
		return m.addStr(act, otelPromptName, payloadString(e.Payload, "name"))
	}
	return nil
}

// mcpResponse: the answer to an mcp_request, generated by the request
// (which ends), attributed to the side that answered; an error keeps the
// tool-error convention. The answer to a host request depends on the host
// answers given to server requests made during it; an answer to a server
// request is such a host answer.
func (m *mapper) mcpResponse(e *eventlog.Event, dt Term) error {
	b := m.base
	n := AnswerIRI(b, e.ID)
	by, err := m.sender(e.Direction)
	if err != nil {
		return err
	}
	types := []string{ProvEntity, WMCPAnswer}
	if c := answerClass(e.Method); c != "" && !e.RPCError {
		types = append(types, c)
	}
	if err := firstErr(
		m.typ(n, types...),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(by)),
		m.wireFields(n, e),
		m.payload(n, e),
		m.responseError(n, e),
	); err != nil {
		return err
	}
	return m.answerOf(e, n, dt)
}

// answerOf links an answer (mcp_response, user_input) to the mcp_request
// its call names.
func (m *mapper) answerOf(e *eventlog.Event, n string, dt Term) error {
	if _, ok := m.link(e, "call", e.Call, eventlog.KindMCPRequest); ok {
		req := requestIRI(m.base, e.Call)
		return firstErr(
			m.add(n, ProvWasGeneratedBy, Ref(req)),
			m.add(req, provEndedAtTime, dt),
			m.influences(n, e.Call),
			m.answer(e.Call, n, ""),
		)
	} else if e.Call != "" {
		return m.unresolved(n, "call", e.Call)
	}
	return nil
}

// userInput: the user's answer to an elicitation, attributed to the user
// and generated by the elicitation request; its action (accept, decline,
// cancel) named.
func (m *mapper) userInput(e *eventlog.Event, dt Term) error {
	n := UserInputIRI(m.base, e.ID)
	u, err := m.user()
	if err != nil {
		return err
	}
	if err := firstErr(
		m.typ(n, ProvEntity, WUserInput),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(u)),
		m.wireFields(n, e),
		m.payload(n, e),
		m.responseError(n, e),
	); err != nil {
		return err
	}
	if !e.RPCError {
		if err := m.addStr(n, wElicitationAction, payloadString(e.Payload, "action")); err != nil {
			return err
		}
	}
	return m.answerOf(e, n, dt)
}
