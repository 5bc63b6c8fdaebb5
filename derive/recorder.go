package derive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/mcp"
	"sync"
)

// Recorder writes choke-point events through a chain Writer, one method per
// choke point, each returning the new event's id so that later events can
// link to it. It pairs tool responses with their calls by the exact JSON-RPC
// id token, applies redaction before anything is written, and is safe for
// concurrent use (a proxy records both directions at once).
type Recorder struct {
	mu       sync.Mutex
	w        *eventlog.Writer
	source   eventlog.Source
	clock    func() string
	redactor *Redactor

	open       map[string]openCall // exact JSON-RPC id token -> open call
	lastByTool map[string]string   // tool -> id of its latest call
	toolOf     map[string]string   // open call id -> tool
	lastInput  string
	// linked: every caller passes the links itself (the Deriver, which
	// pairs by id with bounded maps of its own), so the recorder keeps no
	// per-call state that a flood of unanswered calls could grow
	linked bool
}

type openCall struct {
	id   string
	tool string
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	Source   eventlog.Source // default source of events (observed when empty)
	Clock    func() string   // the ts of events that carry none (required)
	Redactor *Redactor       // nil: no redaction
}

// NewRecorder returns a Recorder writing through w.
func NewRecorder(w *eventlog.Writer, o RecorderOptions) *Recorder {
	src := o.Source
	if src == "" {
		src = eventlog.SourceObserved
	}
	clock := o.Clock
	if clock == nil {
		clock = func() string { return eventlog.Timestamp(nil) }
	}
	return &Recorder{w: w, source: src, clock: clock, redactor: o.Redactor,
		open: map[string]openCall{}, lastByTool: map[string]string{}, toolOf: map[string]string{}}
}

// ToolCallEvent is an outgoing tool call (choke point a).
type ToolCallEvent struct {
	Tool      string
	Arguments any             // the call's arguments (JSON value or json.RawMessage); nil for none
	RPCID     json.RawMessage // the exact JSON-RPC id token, for pairing the response
	Method    string          // default "tools/call"
	Cause     string          // id of the model_output that asked for the call, when known
	TS        string
	Source    eventlog.Source
	Wire      *eventlog.WireRef
	Numbers   map[string]string // exact wire text of argument numbers canonical JSON writes otherwise (Event.Numbers)
	// WireRedacted: the wire line was redacted before the arguments were
	// read from it (the event is marked redacted)
	WireRedacted bool
}

// ToolResponseEvent is the server's answer to a tool call (choke point b).
type ToolResponseEvent struct {
	Tool     string          // default: the tool of the paired call
	Call     string          // id of the call; default: the open call with the same RPCID
	RPCID    json.RawMessage // the exact JSON-RPC id token of the response
	Result   any             // the result object, or the JSON-RPC error object when RPCError
	RPCError bool
	IsError  *bool // default: result.isError, or true for a JSON-RPC error
	TS       string
	Source   eventlog.Source
	Wire     *eventlog.WireRef
	Numbers  map[string]string // exact wire text of result numbers canonical JSON writes otherwise (Event.Numbers)
	// WireRedacted: the wire line was redacted before the result was read
	// from it (the event is marked redacted)
	WireRedacted bool
}

// ModelInputEvent is a message to the model (choke point c). Observed on
// the MCP wire it is a server's sampling/createMessage request: Method,
// RPCID, Direction, During or DuringCandidates, Wire and Numbers are set
// and Content is the request's params.
type ModelInputEvent struct {
	Role    string // default "user"
	Content any
	TS      string
	Source  eventlog.Source

	Method           string
	RPCID            json.RawMessage
	Direction        string
	During           string
	DuringCandidates []string
	Wire             *eventlog.WireRef
	Numbers          map[string]string
	// WireRedacted: the wire line was redacted before the content was
	// read from it (the event is marked redacted)
	WireRedacted bool
}

// ModelOutputEvent is the model's response (choke point d). Observed on
// the MCP wire it is the host's answer to sampling/createMessage: Method,
// RPCID, Direction, Wire and Numbers are set, Content is the result, or
// the JSON-RPC error object with RPCError.
type ModelOutputEvent struct {
	Role    string // default "assistant"
	Content any
	Input   string // id of the model_input it answers; default: the latest model_input
	TS      string
	Source  eventlog.Source

	Method       string
	RPCID        json.RawMessage
	Direction    string
	RPCError     bool
	Wire         *eventlog.WireRef
	Numbers      map[string]string
	WireRedacted bool
}

// mcpRequestEvent is a JSON-RPC request other than tools/call and
// sampling/createMessage, in either direction (kind mcp_request).
type mcpRequestEvent struct {
	Method    string
	RPCID     json.RawMessage
	Direction string // eventlog.DirC2S or eventlog.DirS2C
	Params    any    // the request's params; {} when absent
	// During, DuringCandidates: on a server request, the one host request
	// open when it was sent, or all of them when several were
	During           string
	DuringCandidates []string
	TS               string
	Source           eventlog.Source
	Wire             *eventlog.WireRef
	Numbers          map[string]string
	WireRedacted     bool
}

// mcpResponseEvent is the answer to an mcp_request (kind mcp_response), or
// to an elicitation/create request (kind user_input, Recorder.UserInput).
type mcpResponseEvent struct {
	Method       string // the request's method
	Call         string // id of the mcp_request it answers
	RPCID        json.RawMessage
	Direction    string
	Result       any // the result, or the JSON-RPC error object when RPCError
	RPCError     bool
	TS           string
	Source       eventlog.Source
	Wire         *eventlog.WireRef
	Numbers      map[string]string
	WireRedacted bool
}

// ExternalEffectEvent is a side effect of a tool (choke point e).
type ExternalEffectEvent struct {
	Tool   string
	Call   string // id of the call that caused it; default: the latest call of Tool
	Effect eventlog.Effect
	Detail any // optional payload (e.g. the tool result the effect was derived from)
	TS     string
	Source eventlog.Source
	Wire   *eventlog.WireRef
}

// messageEvent is an application message between agents (firewall).
type messageEvent struct {
	Message eventlog.Message
	Cause   string
	Payload any
	TS      string
	Source  eventlog.Source
}

// notificationEvent is a JSON-RPC notification in either direction, or a
// witness observation of the wire (witness/...).
type notificationEvent struct {
	Method       string
	Params       any
	RPCID        json.RawMessage // only in logs of older witnesses (server requests)
	Direction    string          // eventlog.DirC2S or eventlog.DirS2C
	Concerns     string          // the request it names (progress token, cancelled request id)
	TS           string
	Source       eventlog.Source
	Wire         *eventlog.WireRef
	Numbers      map[string]string // exact wire text of params numbers canonical JSON writes otherwise (Event.Numbers)
	WireRedacted bool
}

// ToolCall records a tool call and returns its event id.
func (r *Recorder) ToolCall(in ToolCallEvent) (string, error) {
	if in.Tool == "" {
		return "", errors.New("record tool_call: tool is empty")
	}
	method := in.Method
	if method == "" {
		method = mcp.MethodToolsCall
	}
	e := &eventlog.Event{Kind: eventlog.KindToolCall, Tool: in.Tool, Method: method, Cause: in.Cause, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	if len(in.RPCID) > 0 {
		e.RPCID = append(json.RawMessage(nil), bytes.TrimSpace(in.RPCID)...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.write(e, in.TS, in.Source, in.Arguments)
	if err != nil {
		return "", err
	}
	if r.linked {
		return id, nil
	}
	if len(e.RPCID) > 0 {
		r.open[string(e.RPCID)] = openCall{id: id, tool: in.Tool}
	}
	r.toolOf[id] = in.Tool
	r.lastByTool[in.Tool] = id
	return id, nil
}

// ToolResponse records a tool response, linked to its call, and returns its id.
func (r *Recorder) ToolResponse(in ToolResponseEvent) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &eventlog.Event{Kind: eventlog.KindToolResponse, Tool: in.Tool, Call: in.Call, RPCError: in.RPCError, IsError: in.IsError, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	if len(in.RPCID) > 0 {
		e.RPCID = append(json.RawMessage(nil), bytes.TrimSpace(in.RPCID)...)
	}
	key := string(e.RPCID)
	if e.Call == "" && key != "" {
		if oc, ok := r.open[key]; ok {
			e.Call = oc.id
		}
	}
	if e.Tool == "" && e.Call != "" {
		e.Tool = r.toolOf[e.Call]
	}
	if e.IsError == nil {
		if in.RPCError {
			t := true
			e.IsError = &t
		} else if e.IsError = isErrorOf(in.Result); e.IsError == nil && isObject(in.Result) {
			f := false // MCP: isError defaults to false
			e.IsError = &f
		}
	}
	id, err := r.write(e, in.TS, in.Source, in.Result)
	if err != nil {
		return "", err
	}
	if r.linked {
		return id, nil
	}
	if oc, ok := r.open[key]; ok && oc.id == e.Call {
		delete(r.open, key)
	}
	delete(r.toolOf, e.Call)
	return id, nil
}

// ModelInput records a message to the model and returns its id.
func (r *Recorder) ModelInput(in ModelInputEvent) (string, error) {
	role := in.Role
	if role == "" {
		role = "user"
	}
	e := &eventlog.Event{Kind: eventlog.KindModelInput, Role: role, Method: in.Method, RPCID: rpcID(in.RPCID), Direction: in.Direction,
		During: in.During, DuringCandidates: in.DuringCandidates, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.write(e, in.TS, in.Source, in.Content)
	if err != nil {
		return "", err
	}
	r.lastInput = id
	return id, nil
}

// ModelOutput records the model's response and returns its id.
func (r *Recorder) ModelOutput(in ModelOutputEvent) (string, error) {
	role := in.Role
	if role == "" {
		role = "assistant"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	input := in.Input
	if input == "" {
		input = r.lastInput
	}
	e := &eventlog.Event{Kind: eventlog.KindModelOutput, Role: role, Input: input, Method: in.Method, RPCID: rpcID(in.RPCID), Direction: in.Direction,
		RPCError: in.RPCError, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	return r.write(e, in.TS, in.Source, in.Content)
}

// mcpRequest records a JSON-RPC request other than tools/call and
// sampling/createMessage and returns its id.
func (r *Recorder) mcpRequest(in mcpRequestEvent) (string, error) {
	if in.Method == "" {
		return "", errors.New("record mcp_request: method is empty")
	}
	e := &eventlog.Event{Kind: eventlog.KindMCPRequest, Method: in.Method, RPCID: rpcID(in.RPCID), Direction: in.Direction,
		During: in.During, DuringCandidates: in.DuringCandidates, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	params := in.Params
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(e, in.TS, in.Source, params)
}

// mcpResponse records the answer to an mcp_request and returns its id. A
// JSON-RPC error is marked rpc_error and is_error.
func (r *Recorder) mcpResponse(in mcpResponseEvent) (string, error) {
	e := r.answer(eventlog.KindMCPResponse, in)
	if in.RPCError {
		t := true
		e.IsError = &t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(e, in.TS, in.Source, in.Result)
}

// userInput records the host's answer to an elicitation/create request
// (what the user answered) and returns its id.
func (r *Recorder) userInput(in mcpResponseEvent) (string, error) {
	e := r.answer(eventlog.KindUserInput, in)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(e, in.TS, in.Source, in.Result)
}

func (r *Recorder) answer(k eventlog.Kind, in mcpResponseEvent) *eventlog.Event {
	return &eventlog.Event{Kind: k, Method: in.Method, Call: in.Call, RPCID: rpcID(in.RPCID), Direction: in.Direction,
		RPCError: in.RPCError, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
}

// rpcID copies an id token without surrounding whitespace; nil for none.
func rpcID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), bytes.TrimSpace(id)...)
}

// ExternalEffect records a side effect of a tool and returns its id.
func (r *Recorder) ExternalEffect(in ExternalEffectEvent) (string, error) {
	if in.Effect.Op == "" {
		return "", errors.New("record external_effect: effect op is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	call := in.Call
	if call == "" && in.Tool != "" {
		call = r.lastByTool[in.Tool]
	}
	eff := in.Effect
	return r.write(&eventlog.Event{Kind: eventlog.KindExternalEffect, Tool: in.Tool, Call: call, Effect: &eff, Wire: in.Wire}, in.TS, in.Source, in.Detail)
}

// message records an application message between agents and returns its id.
func (r *Recorder) message(in messageEvent) (string, error) {
	m := in.Message
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(&eventlog.Event{Kind: eventlog.KindMessage, Message: &m, Cause: in.Cause}, in.TS, in.Source, in.Payload)
}

// notification records a server notification (or server request) and returns its id.
func (r *Recorder) notification(in notificationEvent) (string, error) {
	if in.Method == "" {
		return "", errors.New("record notification: method is empty")
	}
	e := &eventlog.Event{Kind: eventlog.KindNotification, Method: in.Method, RPCID: rpcID(in.RPCID), Direction: in.Direction,
		Concerns: in.Concerns, Wire: in.Wire, Numbers: in.Numbers, Redacted: in.WireRedacted}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(e, in.TS, in.Source, in.Params)
}

// ambiguous records a wire line that has no single reading and returns the
// event's id.
func (r *Recorder) ambiguous(a *eventlog.AmbiguousLine, ts string, wire *eventlog.WireRef) (string, error) {
	if a == nil {
		return "", errors.New("record ambiguous: no line")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.write(&eventlog.Event{Kind: eventlog.KindAmbiguous, Wire: wire}, ts, "", a)
}

// Finish writes the signed session_end through the recorder's writer.
func (r *Recorder) Finish(o eventlog.EndOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.TS == "" {
		o.TS = r.clock()
	}
	return eventlog.FinishWith(r.w, o)
}

// openCalls returns the ids of calls that have no response yet, in no order.
func (r *Recorder) openCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.open))
	for _, oc := range r.open {
		out = append(out, oc.id)
	}
	return out
}

// write fills ts, source and the (redacted) payload of e and appends it.
// The caller holds r.mu.
func (r *Recorder) write(e *eventlog.Event, ts string, src eventlog.Source, payload any) (string, error) {
	if ts == "" {
		ts = r.clock()
	}
	if src == "" {
		src = r.source
	}
	e.TS, e.Source = ts, src
	if payload != nil {
		raw, err := toRaw(payload)
		if err != nil {
			return "", fmt.Errorf("record %s: %w", e.Kind, err)
		}
		if r.redactor != nil {
			out, changed, err := r.redactor.payload(payloadRootOf(e), raw)
			if err != nil {
				return "", fmt.Errorf("record %s: redact: %w", e.Kind, err)
			}
			raw, e.Redacted = out, changed || e.Redacted
		}
		if e.Redacted {
			// a number text could be a redacted value: keep none
			e.Numbers = nil
		}
		if err := eventlog.SetPayload(e, raw); err != nil {
			return "", fmt.Errorf("record %s: %w", e.Kind, err)
		}
	}
	if err := r.w.Append(e); err != nil {
		return "", fmt.Errorf("record %s: %w", e.Kind, err)
	}
	return e.ID, nil
}

func toRaw(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case json.RawMessage:
		return t, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		return b, nil
	}
}

// isErrorOf returns result.isError when result is an object holding a bool
// isError, else nil.
func isErrorOf(result any) *bool {
	raw, err := toRaw(result)
	if err != nil {
		return nil
	}
	var obj struct {
		IsError *bool `json:"isError"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return obj.IsError
}

// isObject reports whether v is (or encodes to) a JSON object.
func isObject(v any) bool {
	raw, err := toRaw(v)
	if err != nil {
		return false
	}
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
