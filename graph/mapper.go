package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Options tune the mapping of an event log to a graph.
type Options struct {
	// Seal, when set, is the plan of the session: the seal given on the
	// command line. Otherwise the seal named by the log header is used.
	Seal *eventlog.SealRef
	// OmitPayloads leaves out prov:value (payload contents), keeping only
	// their hashes.
	OmitPayloads bool
	// Scope, when set, scopes every node IRI of the log by its log
	// identity: the base becomes urn:witness:<session>;<scope>
	// (BuildRun sets it to the first 16 hex digits of the log's sha256 when
	// several logs are joined; docs/design/causal-join.md).
	Scope string
}

// emitFunc receives one statement.
type emitFunc func(s, p string, o Term) error

// evInfo is what the mapper remembers of an earlier event.
type evInfo struct {
	kind eventlog.Kind
	ts   string // canonical dateTime; kept for model_input and model_output only
}

// mapper turns events, in log order, into statements. It keeps one small
// record per event id (to resolve causal links), nothing else.
type mapper struct {
	opts    Options
	emit    emitFunc
	session string
	base    string
	plan    string            // seal IRI, "" when no plan is known
	tools   map[string]string // the IRI of each tool the server listed, by name
	// strs holds the strings of the event being mapped; seq and payload
	// are its pieces for the envelope and the payload (ok: set)
	strs      evStrings
	seq       piece
	payloadOK bool
	payloadP  piece
	seen      map[string]evInfo // events whose id is not "e<n>"
	byNum     [][]evInfo        // events with id "e<n>", at n, in chunks of numChunk (kind "" = unseen)
	nNum      int               // 1 + the largest n remembered in byNum
	agentIRI  string            // the agent's IRI once declared (agent)
	srvIRI    string            // the server's IRI once declared (server)
	declared  map[string]bool   // agent nodes whose types were emitted
	started   bool
	// serverReqs: the during link of each server request (mcp_request or
	// sampling model_input) that has one, by event id, for its answer.
	serverReqs map[string]serverReq
	// answered: by client request id, the host answers to server requests
	// made during it, in log order; its later results and effects depend
	// on them (mcpsurface.go).
	answered map[string][]answerRef
	// lastEnd is the time of the last session_end seen: the session's one
	// prov:endedAtTime, emitted by finish (a log appended to after its end
	// holds several, the earlier ones checkpoints).
	lastEnd Term
	ended   bool
}

// finish emits what needs the whole log: the session's prov:endedAtTime,
// once, at its last session_end (PROV-CONSTRAINTS: one end per activity).
func (m *mapper) finish() error {
	if !m.ended || m.base == "" {
		return nil
	}
	return m.add(sessionNodeIRI(m.base), provEndedAtTime, m.lastEnd)
}

func newMapper(opts Options, emit emitFunc) *mapper {
	m := &mapper{opts: opts, emit: emit, tools: map[string]string{}, seen: map[string]evInfo{}, declared: map[string]bool{},
		serverReqs: map[string]serverReq{}, answered: map[string][]answerRef{}}
	return m
}

// eventError is a mapping error naming the event. Once the reader has
// placed it (File, Line) it prints in the one position format of witness's
// readers: "file:line: $.field: message (event eN, seq N)".
type eventError struct {
	File  string
	Line  int64
	ID    string
	Seq   int64
	Field string
	Err   error
}

func (e *eventError) Error() string {
	path := ""
	if e.Field != "" {
		path = "$." + e.Field
	}
	return jsontree.Format(e.File, e.Line, 0, path, fmt.Sprintf("%v (event %s, seq %d)", e.Err, e.ID, e.Seq))
}

func (e *eventError) Unwrap() error { return e.Err }

// dateTime returns the canonical xsd:dateTime form of an RFC 3339 time: UTC,
// "Z", fractional seconds with trailing zeros trimmed.
func dateTime(ts string) (string, error) {
	if canonicalDateTime(ts) {
		return ts, nil
	}
	return parseDateTime(ts)
}

// parseDateTime is DateTime the long way, for any RFC 3339 time.
func parseDateTime(ts string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", fmt.Errorf("not an RFC 3339 time: %q", ts)
	}
	return t.UTC().Format("2006-01-02T15:04:05.999999999Z"), nil
}

func (m *mapper) add(s, p string, o Term) error { return m.emit(s, p, o) }

func (m *mapper) typ(s string, types ...string) error {
	for _, t := range types {
		if err := m.emit(s, RDFType, Ref(t)); err != nil {
			return err
		}
	}
	return nil
}

// declareAgent emits the types of an agent node once.
func (m *mapper) declareAgent(iri string, class string) error {
	if m.declared[iri] {
		return nil
	}
	m.declared[iri] = true
	return m.typ(iri, ProvAgent, ProvSoftwareAgent, class)
}

func (m *mapper) agent() (string, error) {
	if m.agentIRI != "" {
		return m.agentIRI, nil
	}
	a := agentIRI(m.base)
	if err := m.declareAgent(a, waiAgent); err != nil {
		return a, err
	}
	m.agentIRI = a
	return a, nil
}

func (m *mapper) server() (string, error) {
	if m.srvIRI != "" {
		return m.srvIRI, nil
	}
	s := serverIRI(m.base)
	if err := m.declareAgent(s, wmcpServer); err != nil {
		return s, err
	}
	m.srvIRI = s
	return s, nil
}

func (m *mapper) setPlan(ref *eventlog.SealRef) error {
	if ref == nil || ref.Digest == "" || m.plan != "" {
		return nil
	}
	m.plan = sealIRI(ref.Digest)
	if err := m.typ(m.plan, ProvEntity, ProvPlan, WSeal); err != nil {
		return err
	}
	if err := m.add(m.plan, WSealDigest, Str(ref.Digest)); err != nil {
		return err
	}
	if ref.WitnessID != "" {
		return m.add(m.plan, WWitnessID, Str(ref.WitnessID))
	}
	return nil
}

// associate links activity to the AI agent, through a qualified association
// whose plan is the seal when one is known.
func (m *mapper) associate(activity string) error {
	q := ""
	if m.plan != "" {
		q = assocIRI(activity)
	}
	return m.associateQ(activity, q)
}

// associateQ is associate with the association's IRI (AssocIRI(activity))
// given, "" when no plan is known.
func (m *mapper) associateQ(activity, q string) error {
	a, err := m.agent()
	if err != nil {
		return err
	}
	if err := m.add(activity, provWasAssociatedWith, Ref(a)); err != nil {
		return err
	}
	if m.plan == "" {
		return nil
	}
	return firstErr(
		m.add(activity, provQualifiedAssociation, Ref(q)),
		m.typ(q, ProvAssociation),
		m.add(q, provAgentProp, Ref(a)),
		m.add(q, provHadPlan, Ref(m.plan)),
	)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// envelope emits the event id, seq and source on the event's primary node.
func (m *mapper) envelope(node string, e *eventlog.Event) error {
	if err := m.add(node, WEventID, Str(e.ID)); err != nil {
		return err
	}
	if err := m.add(node, WSeq, Lit(m.strs.get(m.seq), XSDInteger)); err != nil {
		return err
	}
	if e.Source != "" {
		if err := m.add(node, WSource, Str(string(e.Source))); err != nil {
			return err
		}
	}
	if e.Redacted {
		if err := m.add(node, wRedacted, boolLit(true)); err != nil {
			return err
		}
	}
	return m.legacy(node, e.Legacy)
}

// legacy emits what an imported 0.1.0 line said that has no place in the
// envelope: its format, line, seal reference, unsealed flag and orphan mark.
func (m *mapper) legacy(node string, l *eventlog.Legacy) error {
	if l == nil {
		return nil
	}
	if err := firstErr(
		m.add(node, wLegacyFormat, Str(l.Format)),
		m.add(node, wLegacyLine, Lit(strconv.FormatInt(l.Line, 10), XSDInteger)),
	); err != nil {
		return err
	}
	if l.SealRef != "" {
		if err := m.add(node, WLegacySealRef, Str(l.SealRef)); err != nil {
			return err
		}
	}
	if l.Unsealed != nil {
		if err := m.add(node, wLegacyUnsealed, boolLit(*l.Unsealed)); err != nil {
			return err
		}
	}
	if l.Orphan {
		if err := m.add(node, wLegacyOrphan, boolLit(true)); err != nil {
			return err
		}
	}
	return nil
}

// payload emits the payload hash and (unless omitted) its canonical JSON.
func (m *mapper) payload(node string, e *eventlog.Event) error {
	if e.PayloadSHA256 != "" {
		if err := m.add(node, wPayloadSHA256, Str(e.PayloadSHA256)); err != nil {
			return err
		}
	}
	if len(e.Payload) == 0 || m.opts.OmitPayloads {
		return nil
	}
	// the payload's JSON text as the log line recorded it (canonical in
	// every log witness writes: lines are canonical JSON)
	p := bytes.TrimSpace(e.Payload)
	if !utf8.Valid(p) {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "payload", Err: errors.New("not valid UTF-8")}
	}
	if !m.payloadOK {
		m.payloadP, m.payloadOK = m.strs.bytes(p), true
	}
	return m.add(node, ProvValue, Str(m.strs.get(m.payloadP)))
}

// startEvent begins the strings of event e: its seq and (unless omitted)
// its payload, the first pieces of m.strs.
func (m *mapper) startEvent(e *eventlog.Event) {
	m.strs.reset()
	m.seq = m.strs.int(e.Seq)
	m.payloadOK = false
	if len(e.Payload) > 0 && !m.opts.OmitPayloads {
		m.payloadP, m.payloadOK = m.strs.bytes(bytes.TrimSpace(e.Payload)), true
	}
}

// link resolves a causal link to an earlier event of one of the given kinds.
func (m *mapper) link(e *eventlog.Event, field, target string, kinds ...eventlog.Kind) (eventlog.Kind, bool) {
	if target == "" {
		return "", false
	}
	info, ok := m.lookup(target)
	if !ok {
		return "", false
	}
	for _, k := range kinds {
		if info.kind == k {
			return k, true
		}
	}
	return "", false
}

func (m *mapper) unresolved(node, field, target string) error {
	return m.add(node, WUnresolvedLink, Str(field+"="+target))
}

func boolLit(b bool) Term {
	if b {
		return Lit("true", xsdBoolean)
	}
	return Lit("false", xsdBoolean)
}

// rpcID returns the jsonrpc.request.id value of a raw id token: the string
// for a JSON string, the token text otherwise.
func rpcID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1 : len(raw)-1]), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	return string(raw), nil
}

// event maps one event.
func (m *mapper) event(e *eventlog.Event) error {
	if err := m.event1(e); err != nil {
		var ee *eventError
		if errors.As(err, &ee) {
			return err
		}
		return &eventError{ID: e.ID, Seq: e.Seq, Err: err}
	}
	return nil
}

// event1 maps one event: the envelope rules every event obeys (same
// session, unique id, a valid ts), then the step for its kind.
func (m *mapper) event1(e *eventlog.Event) error {
	if err := m.checkSession(e); err != nil {
		return err
	}
	if _, dup := m.lookup(e.ID); dup {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "id", Err: errors.New("duplicate event id")}
	}
	ts, err := dateTime(e.TS)
	if err != nil {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "ts", Err: err}
	}
	info := evInfo{kind: kindConst(e.Kind)}
	if e.Kind == eventlog.KindModelInput || e.Kind == eventlog.KindModelOutput {
		// kept: a copy, not a window on the event's line (FastReader)
		info.ts = strings.Clone(ts)
	}
	defer m.remember(e.ID, info)
	m.startEvent(e)
	return m.kindStep(e, Lit(ts, xsdDateTime))
}

// kindStep dispatches an event to the step that maps its kind; dt is the
// event's time as an xsd:dateTime literal.
func (m *mapper) kindStep(e *eventlog.Event, dt Term) error {
	switch e.Kind {
	case eventlog.KindSessionStart:
		return m.sessionStart(e, dt)
	case eventlog.KindSessionEnd:
		return m.sessionEnd(e, dt)
	case eventlog.KindToolCall:
		return m.toolCall(e, dt)
	case eventlog.KindToolResponse:
		return m.toolResponse(e, dt)
	case eventlog.KindModelInput:
		return m.modelInput(e, dt)
	case eventlog.KindModelOutput:
		return m.modelOutput(e, dt)
	case eventlog.KindExternalEffect:
		return m.externalEffect(e, dt)
	case eventlog.KindAmbiguous:
		return m.ambiguous(e, dt)
	case eventlog.KindNotification:
		return m.notification(e, dt)
	case eventlog.KindMessage:
		return m.message(e, dt)
	case eventlog.KindMCPRequest:
		return m.mcpRequest(e, dt)
	case eventlog.KindMCPResponse:
		return m.mcpResponse(e, dt)
	case eventlog.KindUserInput:
		return m.userInput(e, dt)
	}
	return &eventError{ID: e.ID, Seq: e.Seq, Field: "kind", Err: fmt.Errorf("unknown kind %q", e.Kind)}
}

// checkSession takes the session (and the seal given in the options) from
// the first event, and refuses a later event of another session.
func (m *mapper) checkSession(e *eventlog.Event) error {
	if m.started {
		if e.Session != m.session {
			return &eventError{ID: e.ID, Seq: e.Seq, Field: "session", Err: fmt.Errorf("session %q differs from the log's session %q", e.Session, m.session)}
		}
		return nil
	}
	m.started = true
	m.session = e.Session
	m.base = SessionIRI(e.Session)
	if m.opts.Scope != "" {
		m.base = scopedSessionIRI(e.Session, m.opts.Scope)
	}
	if err := CheckIRI(m.base); err != nil {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "session", Err: err}
	}
	if m.opts.Seal != nil {
		return m.setPlan(m.opts.Seal)
	}
	return nil
}

// sessionEnd: the capture session ends; its count, chain head, reason and
// signing keys.
func (m *mapper) sessionEnd(e *eventlog.Event, dt Term) error {
	s := sessionNodeIRI(m.base)
	if err := m.typ(s, ProvActivity, WCaptureSession); err != nil {
		return err
	}
	m.lastEnd, m.ended = dt, true
	if e.End == nil {
		return nil
	}
	if err := firstErr(
		m.add(s, wEventCount, Lit(strconv.FormatInt(e.End.Count, 10), XSDInteger)),
		m.add(s, wChainHead, Str(e.End.Head)),
	); err != nil {
		return err
	}
	if e.End.Reason != "" {
		if err := m.add(s, wEndReason, Str(e.End.Reason)); err != nil {
			return err
		}
	}
	for _, sig := range e.End.Signatures {
		if err := m.add(s, wSignatureKeyID, Str(sig.KeyID)); err != nil {
			return err
		}
	}
	return nil
}

// modelInput: a message to the model, attributed to the agent; a
// sampling request observed on the wire is attributed to the server that
// sent it, and linked to the host request it was made during.
func (m *mapper) modelInput(e *eventlog.Event, dt Term) error {
	n := m.strs.get(m.strs.iri(m.base, "/msg/", e.ID))
	attr := m.agent
	if e.Direction == eventlog.DirS2C {
		attr = m.server
	}
	by, err := attr()
	if err != nil {
		return err
	}
	if err := firstErr(
		m.typ(n, ProvEntity, WModelMessage),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(by)),
		m.role(n, e),
		m.payload(n, e),
		m.wireFields(n, e),
	); err != nil {
		return err
	}
	return m.serverRequestLinks(e, n, "", n, ProvWasInfluencedBy)
}

// externalEffect: a side effect of a tool, attributed to the server and
// generated by its call.
func (m *mapper) externalEffect(e *eventlog.Event, dt Term) error {
	pn := m.strs.iri(m.base, "/effect/", e.ID)
	_, linked := m.link(e, "call", e.Call, eventlog.KindToolCall)
	var pc piece
	if linked {
		pc = m.strs.iri(m.base, "/call/", e.Call)
	}
	n := m.strs.get(pn)
	srv, err := m.server()
	if err != nil {
		return err
	}
	if err := firstErr(
		m.typ(n, ProvEntity, WExternalEffect),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(srv)),
		m.tool(n, e),
		m.payload(n, e),
	); err != nil {
		return err
	}
	if err := m.effect(n, e.Effect); err != nil {
		return err
	}
	if linked {
		return firstErr(
			m.add(n, ProvWasGeneratedBy, Ref(m.strs.get(pc))),
			m.influences(n, e.Call),
		)
	} else if e.Call != "" {
		return m.unresolved(n, "call", e.Call)
	}
	return nil
}

// effect emits what an effect did: op, target and reason.
func (m *mapper) effect(n string, eff *eventlog.Effect) error {
	if eff == nil {
		return nil
	}
	if err := m.add(n, WEffectOp, Str(eff.Op)); err != nil {
		return err
	}
	if eff.Target != "" {
		if err := m.add(n, WEffectTarget, Str(eff.Target)); err != nil {
			return err
		}
	}
	if eff.Reason != "" {
		return m.add(n, wEffectReason, Str(eff.Reason))
	}
	return nil
}

// ambiguous: a wire line with more than one reading; its exact bytes,
// reasons and readings are its payload.
func (m *mapper) ambiguous(e *eventlog.Event, dt Term) error {
	n := m.strs.get(m.strs.iri(m.base, "/ambiguous/", e.ID))
	return firstErr(
		m.typ(n, ProvEntity, WAmbiguousLine),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.payload(n, e),
	)
}

// notification: a notification (or a witness observation of the wire),
// attributed to the side that sent it (the server unless the direction is
// c2s), influenced by the request it concerns.
func (m *mapper) notification(e *eventlog.Event, dt Term) error {
	n := m.strs.get(m.strs.iri(m.base, "/note/", e.ID))
	by, err := m.sender(e.Direction)
	if err != nil {
		return err
	}
	if err := firstErr(
		m.typ(n, ProvEntity, WNotification),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(by)),
		m.payload(n, e),
		m.addStr(n, OtelMCPMethodName, e.Method),
		m.addStr(n, WDirection, e.Direction),
	); err != nil {
		return err
	}
	return m.concerns(n, e)
}

func (m *mapper) role(n string, e *eventlog.Event) error {
	if e.Role == "" {
		return nil
	}
	return m.add(n, WRole, Str(e.Role))
}

func (m *mapper) tool(n string, e *eventlog.Event) error {
	if e.Tool == "" {
		return nil
	}
	return m.add(n, OtelToolName, Str(e.Tool))
}

func (m *mapper) rpc(n string, e *eventlog.Event) error {
	if len(e.RPCID) == 0 {
		return nil
	}
	id, err := rpcID(e.RPCID)
	if err != nil {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "rpc_id", Err: err}
	}
	raw := bytes.TrimSpace(e.RPCID)
	if !utf8.Valid(raw) {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: "rpc_id", Err: errors.New("not valid UTF-8")}
	}
	return firstErr(m.add(n, otelJSONRPCRequestID, Str(id)), m.add(n, WRPCIDJSON, Str(string(raw))))
}

// sessionStart: the capture session starts, associated with the witness;
// then what its header says.
func (m *mapper) sessionStart(e *eventlog.Event, dt Term) error {
	s := sessionNodeIRI(m.base)
	w := witnessIRI(m.base)
	if err := firstErr(
		m.typ(s, ProvActivity, WCaptureSession),
		m.envelope(s, e),
		m.add(s, WSession, Str(m.session)),
		m.add(s, provStartedAtTime, dt),
		m.declareAgent(w, wWitness),
		m.add(s, provWasAssociatedWith, Ref(w)),
	); err != nil {
		return err
	}
	h := e.Header
	if h == nil {
		return nil
	}
	if err := m.headerFields(s, w, h); err != nil {
		return err
	}
	if err := m.headerSeal(s, h.Seal); err != nil {
		return err
	}
	if h.Server == nil {
		return nil
	}
	return m.serverInfo(e, h.Server)
}

// addStr emits a string literal, unless it is empty.
func (m *mapper) addStr(node, p, v string) error {
	if v == "" {
		return nil
	}
	return m.add(node, p, Str(v))
}

// headerFields emits the header's witness version, pairing rule, import
// source, notes and redaction rules.
func (m *mapper) headerFields(s, w string, h *eventlog.Header) error {
	if err := firstErr(
		m.addStr(w, wWitnessVersion, h.WitnessVersion),
		m.addStr(s, wPairing, h.Pairing),
		m.addStr(s, WImportedFrom, h.ImportedFrom),
	); err != nil {
		return err
	}
	for _, note := range h.Notes {
		if err := m.addStr(s, wNote, note); err != nil {
			return err
		}
	}
	if h.Redaction != nil {
		for _, r := range h.Redaction.Rules {
			if err := m.addStr(s, wRedactionRule, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// headerSeal binds the session to the header's seal (the plan, unless the
// options gave one), and says the session used the plan.
func (m *mapper) headerSeal(s string, seal *eventlog.SealRef) error {
	if seal != nil {
		if err := m.addStr(s, WBoundSeal, seal.Digest); err != nil {
			return err
		}
		if err := m.setPlan(&eventlog.SealRef{Digest: seal.Digest, WitnessID: seal.WitnessID}); err != nil {
			return err
		}
	}
	if m.plan == "" {
		return nil
	}
	return m.add(s, ProvUsed, Ref(m.plan))
}

// serverInfo emits the MCP server: name, version, protocol, command line
// and its tool definitions.
func (m *mapper) serverInfo(e *eventlog.Event, sv *eventlog.ServerInfo) error {
	srv, err := m.server()
	if err != nil {
		return err
	}
	if err := firstErr(
		m.addStr(srv, wServerName, sv.Name),
		m.addStr(srv, wServerVersion, sv.Version),
		m.addStr(srv, otelMCPProtocolVer, sv.ProtocolVersion),
		m.addStr(srv, wServerCommand, sv.Command),
		m.addStr(srv, wToolsSHA256, sv.ToolsSHA256),
	); err != nil {
		return err
	}
	if len(sv.Args) > 0 {
		argv, err := canon.Marshal(sv.Args)
		if err != nil {
			return &eventError{ID: e.ID, Seq: e.Seq, Field: "header.server.args", Err: err}
		}
		if err := m.addStr(srv, wServerArgv, string(argv)); err != nil {
			return err
		}
	}
	for i, td := range sv.Tools {
		if err := m.toolDef(e, srv, i, td); err != nil {
			return err
		}
	}
	return nil
}

// toolDef emits one tool definition the server listed, with its
// annotations as canonical JSON.
func (m *mapper) toolDef(e *eventlog.Event, srv string, i int, td eventlog.ToolDef) error {
	t := ToolIRI(m.base, td.Name)
	m.tools[strings.Clone(td.Name)] = t
	if err := firstErr(
		m.typ(t, ProvEntity, WToolDefinition),
		m.add(t, OtelToolName, Str(td.Name)),
		m.addStr(t, WDefinitionSHA256, td.SHA256),
		m.add(t, provWasAttributedTo, Ref(srv)),
	); err != nil {
		return err
	}
	if len(td.Annotations) == 0 {
		return nil
	}
	c, err := canon.Transform(td.Annotations)
	if err != nil {
		return &eventError{ID: e.ID, Seq: e.Seq, Field: fmt.Sprintf("header.server.tools[%d].annotations", i), Err: err}
	}
	return m.addStr(t, WAnnotations, string(c))
}

func (m *mapper) toolCall(e *eventlog.Event, dt Term) error {
	b := m.base
	x := &m.strs
	pAct := x.iri(b, "/call/", e.ID)
	var pQ piece
	if m.plan != "" {
		pQ = x.ext(pAct, "/assoc")
	}
	pArgs := x.iri(b, "/args/", e.ID)
	_, caused := m.link(e, "cause", e.Cause, eventlog.KindModelOutput)
	var pTurn, pMsg piece
	if caused {
		pTurn, pMsg = x.iri(b, "/turn/", e.Cause), x.iri(b, "/msg/", e.Cause)
	}
	a, err := m.agent()
	if err != nil {
		return err
	}
	srv, err := m.server()
	if err != nil {
		return err
	}
	// The arguments are generated by the model turn named by cause
	// (callCause), so their generation time is that turn's end, the
	// output's time, never the call's later one (PROV-CONSTRAINTS:
	// generation within the generating activity).
	argsTime := dt
	if caused {
		if out, ok := m.lookup(e.Cause); ok && out.ts != "" {
			argsTime = Lit(out.ts, xsdDateTime)
		}
	}
	act, args := x.get(pAct), x.get(pArgs)
	q := ""
	if m.plan != "" {
		q = x.get(pQ)
	}
	if err := firstErr(
		m.typ(act, ProvActivity, WToolCall),
		m.envelope(act, e),
		m.add(act, provStartedAtTime, dt),
		m.add(act, otelOperationName, Str("execute_tool")),
		m.tool(act, e),
		m.rpc(act, e),
		m.associateQ(act, q),
		m.add(act, provWasAssociatedWith, Ref(srv)),
		m.add(act, ProvUsed, Ref(args)),
		m.typ(args, ProvEntity, WArguments),
		m.add(args, provWasAttributedTo, Ref(a)),
		m.add(args, ProvGeneratedAtTime, argsTime),
		m.payload(args, e),
	); err != nil {
		return err
	}
	if e.Method != "" {
		if err := m.add(act, OtelMCPMethodName, Str(e.Method)); err != nil {
			return err
		}
	}
	if t := m.tools[e.Tool]; e.Tool != "" && t != "" {
		if err := m.add(act, ProvUsed, Ref(t)); err != nil {
			return err
		}
	}
	if caused {
		return m.callCause(act, args, x.get(pTurn), x.get(pMsg))
	} else if e.Cause != "" {
		return m.unresolved(act, "cause", e.Cause)
	}
	return nil
}

// callCause links a tool call to the model turn that asked for it: the
// call was informed by the turn, its arguments generated by the turn and
// derived from the model's output.
// turn and msg: the turn and output message of the model_output named by
// the call's cause.
func (m *mapper) callCause(act, args, turn, msg string) error {
	return firstErr(
		m.add(act, ProvWasInformedBy, Ref(turn)),
		m.add(args, ProvWasGeneratedBy, Ref(turn)),
		m.add(args, ProvWasDerivedFrom, Ref(msg)),
	)
}

// responseError emits whether a tool response is an error: isError, and
// for a JSON-RPC error its code (as status code and error type); for a
// tool error, the error type tool_error.
func (m *mapper) responseError(n string, e *eventlog.Event) error {
	if e.IsError != nil {
		if err := m.add(n, wIsError, boolLit(*e.IsError)); err != nil {
			return err
		}
	}
	if e.RPCError {
		if err := m.add(n, wrpcError, boolLit(true)); err != nil {
			return err
		}
		var obj struct {
			Code json.Number `json:"code"`
		}
		dec := json.NewDecoder(bytes.NewReader(e.Payload))
		dec.UseNumber()
		if dec.Decode(&obj) == nil && obj.Code != "" {
			if code, err := canon.FormatNumber(string(obj.Code)); err == nil {
				if err := firstErr(m.add(n, otelRPCStatusCode, Str(code)), m.add(n, otelErrorType, Str(code))); err != nil {
					return err
				}
			}
		}
	} else if e.IsError != nil && *e.IsError {
		if err := m.add(n, otelErrorType, Str("tool_error")); err != nil {
			return err
		}
	}
	return nil
}

// toolResponse: the result of a call, attributed to the server and
// generated by the call, which ends when it is received.
func (m *mapper) toolResponse(e *eventlog.Event, dt Term) error {
	b := m.base
	pn := m.strs.iri(b, "/result/", e.ID)
	_, linked := m.link(e, "call", e.Call, eventlog.KindToolCall)
	var pc piece
	if linked {
		pc = m.strs.iri(b, "/call/", e.Call)
	}
	n := m.strs.get(pn)
	srv, err := m.server()
	if err != nil {
		return err
	}
	if err := firstErr(
		m.typ(n, ProvEntity, WResult),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.add(n, provWasAttributedTo, Ref(srv)),
		m.tool(n, e),
		m.rpc(n, e),
		m.payload(n, e),
	); err != nil {
		return err
	}
	if err := m.responseError(n, e); err != nil {
		return err
	}
	if linked {
		act := m.strs.get(pc)
		return firstErr(
			m.add(n, ProvWasGeneratedBy, Ref(act)),
			m.add(act, provEndedAtTime, dt),
			m.influences(n, e.Call),
		)
	} else if e.Call != "" {
		return m.unresolved(n, "call", e.Call)
	}
	return nil
}

// modelOutput: a model turn, from its input (when known) to this output.
// A sampling answer observed on the wire is the same turn, marked
// witness:SamplingTurn, informed by the host request the sampling request
// was made during; the output is the AI agent's (the host ran the model)
// either way.
func (m *mapper) modelOutput(e *eventlog.Event, dt Term) error {
	b := m.base
	x := &m.strs
	pTurn := x.iri(b, "/turn/", e.ID)
	var pQ piece
	if m.plan != "" {
		pQ = x.ext(pTurn, "/assoc")
	}
	pOut := x.iri(b, "/msg/", e.ID)
	_, hasInput := m.link(e, "input", e.Input, eventlog.KindModelInput)
	var pIn piece
	if hasInput {
		pIn = x.iri(b, "/msg/", e.Input)
	}
	turn, out := x.get(pTurn), x.get(pOut)
	q := ""
	if m.plan != "" {
		q = x.get(pQ)
	}
	a, err := m.agent()
	if err != nil {
		return err
	}
	start := dt
	var input string
	if hasInput {
		input = x.get(pIn)
		in, _ := m.lookup(e.Input)
		start = Lit(in.ts, xsdDateTime)
	}
	if err := firstErr(
		m.typ(turn, ProvActivity, WModelTurn),
		m.add(turn, otelOperationName, Str("chat")),
		m.add(turn, provStartedAtTime, start),
		m.add(turn, provEndedAtTime, dt),
		m.associateQ(turn, q),
		m.typ(out, ProvEntity, WModelMessage),
		m.envelope(out, e),
		m.add(out, ProvWasGeneratedBy, Ref(turn)),
		m.add(out, ProvGeneratedAtTime, dt),
		m.add(out, provWasAttributedTo, Ref(a)),
		m.role(out, e),
		m.payload(out, e),
		m.wireFields(out, e),
	); err != nil {
		return err
	}
	if err := m.sampling(e, turn, out); err != nil {
		return err
	}
	if input != "" {
		return firstErr(
			m.add(turn, ProvUsed, Ref(input)),
			m.add(out, ProvWasDerivedFrom, Ref(input)),
			m.answer(e.Input, out, turn),
		)
	} else if e.Input != "" {
		return m.unresolved(out, "input", e.Input)
	}
	return nil
}

// message: an application message between agents, derived from (or
// generated by) the event that caused it.
func (m *mapper) message(e *eventlog.Event, dt Term) error {
	n := m.strs.get(m.strs.iri(m.base, "/message/", e.ID))
	if err := firstErr(
		m.typ(n, ProvEntity, WAgentMessage),
		m.envelope(n, e),
		m.add(n, ProvGeneratedAtTime, dt),
		m.payload(n, e),
	); err != nil {
		return err
	}
	if err := m.messageFields(n, e.Message); err != nil {
		return err
	}
	return m.messageCause(n, e)
}

// messageFields emits the message's direction, conversation, sender,
// text, operation, author, post and recipients.
func (m *mapper) messageFields(n string, msg *eventlog.Message) error {
	if msg == nil {
		return nil
	}
	if err := firstErr(
		m.addStr(n, WDirection, msg.Direction),
		m.addStr(n, WConversation, msg.Conversation),
		m.addStr(n, WSender, msg.Sender),
		m.addStr(n, WText, msg.Text),
		m.addStr(n, WOperation, msg.Operation),
		m.addStr(n, WAuthorAgentID, msg.AuthorAgentID),
		m.addStr(n, WPostID, msg.PostID),
	); err != nil {
		return err
	}
	for _, r := range msg.Recipients {
		if err := m.addStr(n, WRecipient, r); err != nil {
			return err
		}
	}
	return nil
}

// messageCause links a message to its cause: generated by a tool call,
// derived from any other event.
func (m *mapper) messageCause(n string, e *eventlog.Event) error {
	b := m.base
	if e.Cause == "" {
		return nil
	}
	info, ok := m.lookup(e.Cause)
	if !ok {
		return m.unresolved(n, "cause", e.Cause)
	}
	switch info.kind {
	case eventlog.KindToolCall:
		return m.add(n, ProvWasGeneratedBy, Ref(CallIRI(b, e.Cause)))
	case eventlog.KindToolResponse:
		return m.add(n, ProvWasDerivedFrom, Ref(ResultIRI(b, e.Cause)))
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		return m.add(n, ProvWasDerivedFrom, Ref(MsgIRI(b, e.Cause)))
	case eventlog.KindExternalEffect:
		return m.add(n, ProvWasDerivedFrom, Ref(effectIRI(b, e.Cause)))
	case eventlog.KindNotification:
		return m.add(n, ProvWasDerivedFrom, Ref(noteIRI(b, e.Cause)))
	case eventlog.KindAmbiguous:
		return m.add(n, ProvWasDerivedFrom, Ref(ambiguousIRI(b, e.Cause)))
	case eventlog.KindMessage:
		return m.add(n, ProvWasDerivedFrom, Ref(messageIRI(b, e.Cause)))
	case eventlog.KindMCPRequest:
		return m.add(n, ProvWasGeneratedBy, Ref(requestIRI(b, e.Cause)))
	case eventlog.KindMCPResponse:
		return m.add(n, ProvWasDerivedFrom, Ref(AnswerIRI(b, e.Cause)))
	case eventlog.KindUserInput:
		return m.add(n, ProvWasDerivedFrom, Ref(UserInputIRI(b, e.Cause)))
	}
	return m.unresolved(n, "cause", e.Cause)
}

// idNum returns n for an id "e<n>" written canonically, else -1.
func idNum(id string) int {
	if len(id) < 2 || len(id) > 12 || id[0] != 'e' || (id[1] == '0' && len(id) > 2) {
		return -1
	}
	n := 0
	for i := 1; i < len(id); i++ {
		c := id[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// kindConst returns the constant equal to k, not a window on the event's
// line (FastReader.ShareLines): the record of an event outlives its line.
func kindConst(k eventlog.Kind) eventlog.Kind {
	for _, c := range [...]eventlog.Kind{eventlog.KindToolCall, eventlog.KindToolResponse, eventlog.KindModelInput,
		eventlog.KindModelOutput, eventlog.KindExternalEffect, eventlog.KindNotification, eventlog.KindMessage,
		eventlog.KindAmbiguous, eventlog.KindSessionStart, eventlog.KindSessionEnd, eventlog.KindMCPRequest,
		eventlog.KindMCPResponse, eventlog.KindUserInput} {
		if k == c {
			return c
		}
	}
	return eventlog.Kind(strings.Clone(string(k)))
}

// numChunk is the size of a chunk of mapper.byNum: the record of every
// event grows without copying what it holds.
const numChunk = 1 << 16

// lookup returns what was remembered of event id.
func (m *mapper) lookup(id string) (evInfo, bool) {
	if n := idNum(id); n >= 0 && n < m.nNum {
		if info := m.byNum[n/numChunk][n%numChunk]; info.kind != "" {
			return info, true
		}
	}
	info, ok := m.seen[id]
	return info, ok
}

// remember records event id. Ids "e<n>" (every log witness writes) go to
// chunks by number, others to a map.
func (m *mapper) remember(id string, info evInfo) {
	// the chunks grow with the log, never by a jump a crafted id asks for
	if n := idNum(id); n >= 0 && n < m.nNum+1<<16 {
		for n/numChunk >= len(m.byNum) {
			m.byNum = append(m.byNum, make([]evInfo, numChunk))
		}
		m.byNum[n/numChunk][n%numChunk] = info
		m.nNum = max(m.nNum, n+1)
		return
	}
	m.seen[strings.Clone(id)] = info
}

// canonicalDateTime reports whether ts is already what DateTime returns
// for it: YYYY-MM-DDTHH:MM:SS[.fraction]Z, a valid time (year 1000 and
// after), the fraction of 1 to 9 digits without a trailing zero.
func canonicalDateTime(ts string) bool {
	if len(ts) < 20 || len(ts) == 21 || len(ts) > 30 || ts[len(ts)-1] != 'Z' {
		return false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(ts[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' || ts[16] != ':' {
		return false
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 1000 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[mo-1]
	if mo == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	if d > days {
		return false
	}
	if len(ts) == 20 {
		return true
	}
	frac := ts[20 : len(ts)-1]
	return ts[19] == '.' && num(20, len(frac)) >= 0 && frac[len(frac)-1] != '0'
}

// evStrings builds the strings the statements of events need (their
// IRIs, seq, payload) in a strings.Builder that serves many events: the
// strings it returns are windows on its buffer, never changed once
// written, so an event's strings cost no allocation of their own (one
// chunk of evChunk bytes serves a few hundred events).
type evStrings struct {
	sb strings.Builder
}

// evChunk is the size of a chunk of evStrings.
const evChunk = 64 << 10

// piece is a string of an evStrings: sb.String()[i:j].
type piece struct{ i, j int }

// reset starts the strings of a new event: in a new chunk when the
// current one has less than a sixteenth left (a string that does not fit
// makes the builder grow by a copy: correct, slower).
func (x *evStrings) reset() {
	if x.sb.Cap()-x.sb.Len() < evChunk/16 {
		x.sb = strings.Builder{}
		x.sb.Grow(evChunk)
	}
}

// get returns piece p as a string.
func (x *evStrings) get(p piece) string { return x.sb.String()[p.i:p.j] }

// iri adds base + seg + PctEncode(id): the IRI of an event's node
// (CallIRI, MsgIRI, ...).
func (x *evStrings) iri(base, seg, id string) piece {
	i := x.sb.Len()
	x.sb.WriteString(base)
	x.sb.WriteString(seg)
	writePct(&x.sb, id)
	return piece{i, x.sb.Len()}
}

// ext adds the string of p followed by suffix (in place when p is the
// last piece).
func (x *evStrings) ext(p piece, suffix string) piece {
	if p.j != x.sb.Len() {
		i := x.sb.Len()
		x.sb.WriteString(x.get(p))
		p = piece{i, x.sb.Len()}
	}
	x.sb.WriteString(suffix)
	return piece{p.i, x.sb.Len()}
}

// int adds the decimal form of n.
func (x *evStrings) int(n int64) piece {
	var d [20]byte
	return x.bytes(strconv.AppendInt(d[:0], n, 10))
}

// bytes adds b.
func (x *evStrings) bytes(b []byte) piece {
	i := x.sb.Len()
	x.sb.Write(b)
	return piece{i, x.sb.Len()}
}

// writePct writes PctEncode(s).
func writePct(sb *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			continue
		}
		sb.WriteString(s[start:i])
		sb.WriteByte('%')
		sb.WriteByte(hex[c>>4])
		sb.WriteByte(hex[c&15])
		start = i + 1
	}
	sb.WriteString(s[start:])
}
