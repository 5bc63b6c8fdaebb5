package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
)

// CassetteName is the cassette file name inside the output directory, as
// events name it in their wire references.
const CassetteName = "cassette.jsonl"

// maxBuffered bounds the events held back while the session header waits
// for the tool list; past it the header is written without the tools.
const maxBuffered = 4096

// Recording is the Sink of a proxied session: it writes every wire line to
// the cassette and derives events from them. It runs on one goroutine (the
// forwarder's recorder).
type Recording struct {
	cas     *cassette.Writer
	events  io.Writer
	clock   func() string
	effects *EffectMap
	header  capture.Header
	signers []capture.Signer
	warn    func(format string, args ...any)

	rec      *capture.Recorder // nil until the session_start is written
	buffered []func() error    // events seen before the session_start

	pending    map[Dir]map[string]*pendingReq // requests by the direction they were sent in, then exact id token
	toolPages  []json.RawMessage              // tool definitions of the tools/list pages seen so far
	annots     map[string]toolAnnotations     // tool name -> annotations of the latest full tool list
	listsSeen  int
	warnings   int
	unanswered int
}

type pendingReq struct {
	method string
	seq    int64
	// tools/call
	tool     string
	args     json.RawMessage
	callID   string // event id of the tool_call, set once written
	callWait *string
	// tools/list
	cursor bool
}

type toolAnnotations struct {
	DestructiveHint *bool `json:"destructiveHint"`
	ReadOnlyHint    *bool `json:"readOnlyHint"`
}

// RecordingOptions configure a Recording.
type RecordingOptions struct {
	Cassette io.Writer // cassette.jsonl
	Events   io.Writer // events.jsonl
	Command  string
	Args     []string
	EnvNames []string
	Clock    func() string // event and cassette timestamps (capture.Timestamp)
	Frozen   bool          // ATW_WITNESS_TS is set: the cassette carries no times
	Seal     *capture.SealRef
	Effects  *EffectMap
	Signers  []capture.Signer
	Warn     func(format string, args ...any) // proxy warnings (stderr)
}

// NewRecording writes the cassette header and returns the recording.
func NewRecording(o RecordingOptions) (*Recording, error) {
	clock := o.Clock
	if clock == nil {
		clock = func() string { return capture.Timestamp(nil) }
	}
	warn := o.Warn
	if warn == nil {
		warn = func(string, ...any) {}
	}
	cw, err := cassette.NewWriter(o.Cassette, cassette.Header{
		Command: o.Command, Args: o.Args, Env: o.EnvNames, Started: clock(), Frozen: o.Frozen, Mode: "proxy",
	})
	if err != nil {
		return nil, err
	}
	r := &Recording{
		cas: cw, events: o.Events, clock: clock, effects: o.Effects, signers: o.Signers, warn: warn,
		pending: map[Dir]map[string]*pendingReq{C2S: {}, S2C: {}},
		annots:  map[string]toolAnnotations{},
	}
	r.header = capture.Header{
		Seal:   o.Seal,
		Server: &capture.ServerInfo{Command: o.Command, Args: o.Args},
		Notes:  []string{"recorded by witness proxy: events derived from the wire lines in " + CassetteName},
	}
	return r, nil
}

// Line implements Sink.
func (r *Recording) Line(l WireLine) error {
	if l.Cont {
		_, err := r.cas.RecordPiece(l.Dir, l.Data)
		if err == nil && l.Dir != Stderr {
			r.warnf("a %s line longer than the maximum line size was recorded in pieces and not interpreted", l.Dir)
		}
		return err
	}
	data := l.Data
	if l.Dir != Stderr && !l.Partial {
		data = data[:len(data)-1]
	}
	seq, err := r.cas.Record(l.Dir, data, l.Partial)
	if err != nil {
		return err
	}
	if l.Dir == Stderr {
		return nil
	}
	return r.derive(l.Dir, data, seq, l.Partial)
}

// Life implements Sink.
func (r *Recording) Life(rec cassette.Record) error {
	_, err := r.cas.Lifecycle(rec)
	return err
}

func (r *Recording) warnf(format string, args ...any) {
	r.warnings++
	if r.warnings <= 20 {
		r.warn(format, args...)
	} else if r.warnings == 21 {
		r.warn("more warnings are not shown; the cassette has every line")
	}
}

func (r *Recording) wire(seq int64) *capture.WireRef {
	return &capture.WireRef{Cassette: CassetteName, Offsets: []int64{seq}}
}

// emit runs f now when the session_start is written, else holds it back.
func (r *Recording) emit(f func() error) error {
	if r.rec != nil {
		return f()
	}
	r.buffered = append(r.buffered, f)
	if len(r.buffered) > maxBuffered {
		return r.start("the tool list had not arrived after many events")
	}
	return nil
}

// start writes the session_start line (once) and the events held back.
func (r *Recording) start(why string) error {
	if r.rec != nil {
		return nil
	}
	if why != "" {
		r.header.Notes = append(r.header.Notes, "session_start written before a complete tools/list: "+why+"; later tool lists are notification events with method tools/list")
	}
	lw, err := capture.StartLog(r.events, &r.header, r.clock(), capture.SourceObserved)
	if err != nil {
		return err
	}
	r.rec = capture.NewRecorder(lw, capture.RecorderOptions{Clock: r.clock})
	held := r.buffered
	r.buffered = nil
	for _, f := range held {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recording) derive(dir Dir, data []byte, seq int64, partial bool) error {
	m, err := mcp.Parse(data)
	if err != nil {
		what := "line"
		if partial {
			what = "partial last line"
		}
		r.warnf("%s %s (cassette record %d) is not a JSON-RPC message: %v", dir, what, seq, err)
		return nil
	}
	switch m.Kind {
	case mcp.KindRequest:
		p := &pendingReq{method: m.Method, seq: seq}
		key := mcp.IDKey(m.ID)
		if _, dup := r.pending[dir][key]; dup {
			r.warnf("%s request id %s reused while still open (cassette record %d)", dir, m.ID, seq)
		}
		r.pending[dir][key] = p
		if dir == S2C {
			return r.notification(m, seq)
		}
		if m.Method == "tools/call" {
			return r.toolCall(m, p, seq)
		}
		if m.Method == "tools/list" {
			var params struct {
				Cursor *string `json:"cursor"`
			}
			_ = json.Unmarshal(m.Params, &params)
			p.cursor = params.Cursor != nil
		}
	case mcp.KindNotification:
		if dir == S2C {
			return r.notification(m, seq)
		}
	case mcp.KindResponse:
		reqDir := C2S
		if dir == C2S {
			reqDir = S2C
		}
		key := mcp.IDKey(m.ID)
		p, ok := r.pending[reqDir][key]
		if !ok {
			r.warnf("%s response id %s (%s) matches no open %s request (cassette record %d)", dir, m.ID, mcp.IDType(m.ID), reqDir, seq)
			return nil
		}
		delete(r.pending[reqDir], key)
		if reqDir == S2C {
			return nil // the host answered a server request; the cassette has it
		}
		switch p.method {
		case "initialize":
			r.initialized(m)
		case "tools/list":
			return r.toolList(m, p)
		case "tools/call":
			return r.toolResponse(m, p, seq)
		}
	}
	return nil
}

func (r *Recording) notification(m *mcp.Message, seq int64) error {
	ev := capture.NotificationEvent{Method: m.Method, RPCID: m.ID, Wire: r.wire(seq)}
	if m.Params != nil {
		ev.Params = json.RawMessage(m.Params)
	}
	return r.emit(func() error {
		_, err := r.rec.Notification(ev)
		return err
	})
}

func (r *Recording) initialized(m *mcp.Message) {
	if m.Result == nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		r.warnf("initialize result is not what MCP describes: %v", err)
		return
	}
	if r.rec != nil {
		return // the header is written; the cassette keeps the late handshake
	}
	r.header.Server.Name = res.ServerInfo.Name
	r.header.Server.Version = res.ServerInfo.Version
	r.header.Server.ProtocolVersion = res.ProtocolVersion
}

func (r *Recording) toolList(m *mcp.Message, p *pendingReq) error {
	if m.Result == nil {
		return nil
	}
	var res struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor *string           `json:"nextCursor"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		r.warnf("tools/list result is not what MCP describes: %v", err)
		return nil
	}
	if !p.cursor {
		r.toolPages = nil // a first page starts a new list
	}
	r.toolPages = append(r.toolPages, res.Tools...)
	if res.NextCursor != nil && *res.NextCursor != "" {
		return nil
	}
	tools := r.toolPages
	r.toolPages = nil
	r.listsSeen++
	defs, digest, annots, err := toolDefs(tools)
	if err != nil {
		r.warnf("tools/list: %v", err)
		return nil
	}
	r.annots = annots
	if r.rec == nil {
		r.header.Server.Tools = defs
		r.header.Server.ToolsSHA256 = digest
		return r.start("")
	}
	list, _ := json.Marshal(map[string]any{"tools": tools})
	_, err = r.rec.Notification(capture.NotificationEvent{Method: "tools/list", Params: json.RawMessage(list)})
	return err
}

// toolDefs returns the header's tool definitions, the sha256 of the
// canonical list, and each tool's annotations.
func toolDefs(tools []json.RawMessage) ([]capture.ToolDef, string, map[string]toolAnnotations, error) {
	defs := make([]capture.ToolDef, 0, len(tools))
	annots := map[string]toolAnnotations{}
	var all bytes.Buffer
	all.WriteByte('[')
	for i, t := range tools {
		c, err := canon.Transform(t)
		if err != nil {
			return nil, "", nil, fmt.Errorf("tool %d: %w", i, err)
		}
		if i > 0 {
			all.WriteByte(',')
		}
		all.Write(c)
		var def struct {
			Name        string          `json:"name"`
			Annotations json.RawMessage `json:"annotations"`
		}
		if err := json.Unmarshal(t, &def); err != nil || def.Name == "" {
			return nil, "", nil, fmt.Errorf("tool %d has no name", i)
		}
		sum := sha256.Sum256(c)
		d := capture.ToolDef{Name: def.Name, SHA256: hex.EncodeToString(sum[:])}
		if len(def.Annotations) > 0 && string(def.Annotations) != "null" {
			ca, err := canon.Transform(def.Annotations)
			if err == nil {
				d.Annotations = ca
			}
			var a toolAnnotations
			_ = json.Unmarshal(def.Annotations, &a)
			annots[def.Name] = a
		}
		defs = append(defs, d)
	}
	all.WriteByte(']')
	sum := sha256.Sum256(all.Bytes())
	return defs, hex.EncodeToString(sum[:]), annots, nil
}

func (r *Recording) toolCall(m *mcp.Message, p *pendingReq, seq int64) error {
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &params); err != nil || params.Name == "" {
		r.warnf("tools/call request id %s has no tool name (cassette record %d)", m.ID, seq)
		return nil
	}
	p.tool, p.args = params.Name, params.Arguments
	if err := r.start(fmt.Sprintf("the first tools/call (id %s) came first", m.ID)); err != nil {
		return err
	}
	ev := capture.ToolCallEvent{Tool: params.Name, RPCID: m.ID, Wire: r.wire(seq)}
	if len(params.Arguments) > 0 {
		ev.Arguments = params.Arguments
	}
	id, err := r.rec.ToolCall(ev)
	p.callID = id
	return err
}

func (r *Recording) toolResponse(m *mcp.Message, p *pendingReq, seq int64) error {
	if p.callID == "" {
		return nil // the call itself was not interpretable
	}
	ev := capture.ToolResponseEvent{Tool: p.tool, Call: p.callID, RPCID: m.ID, Wire: r.wire(seq)}
	failed := false
	if m.Error != nil {
		ev.Result, ev.RPCError = json.RawMessage(m.Error), true
		failed = true
	} else {
		ev.Result = json.RawMessage(m.Result)
		var res struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(m.Result, &res)
		failed = res.IsError
	}
	if _, err := r.rec.ToolResponse(ev); err != nil {
		return err
	}
	if failed {
		return nil // a failed call is not taken to have had its effect
	}
	return r.effect(p, seq, "")
}

// effect records the external effect of a call of p.tool, if the effects
// mapping or the tool's annotations say it has one.
func (r *Recording) effect(p *pendingReq, seq int64, outcome string) error {
	var eff capture.Effect
	if rule, ok := r.effects.rule(p.tool); ok {
		eff.Op = rule.Op
		eff.Reason = "effects mapping: tool " + p.tool
		if t, found := rule.TargetOf(p.args); found {
			eff.Target = t
		} else if rule.Target != "" {
			eff.Reason += "; target " + rule.Target + " not found in the arguments"
		}
	} else if a, ok := r.annots[p.tool]; ok && a.DestructiveHint != nil && *a.DestructiveHint {
		eff.Op = "write"
		eff.Reason = "tool annotation destructiveHint=true"
	} else {
		return nil
	}
	if outcome != "" {
		eff.Reason += "; " + outcome
	}
	ev := capture.ExternalEffectEvent{Tool: p.tool, Call: p.callID, Effect: eff}
	if seq >= 0 {
		ev.Wire = r.wire(seq)
	}
	_, err := r.rec.ExternalEffect(ev)
	return err
}

func (m *EffectMap) rule(tool string) (*EffectRule, bool) {
	if m == nil {
		return nil, false
	}
	r, ok := m.Rules[tool]
	return r, ok
}

// Close ends the event log: the session_start if it was never written, the
// effects of calls that never got an answer, and the signed session_end.
func (r *Recording) Close(reason string) error {
	var errs []error
	if err := r.start(""); err != nil {
		return err
	}
	var open []*pendingReq
	for _, p := range r.pending[C2S] {
		if p.method == "tools/call" && p.callID != "" {
			open = append(open, p)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].seq < open[j].seq })
	for _, p := range open {
		r.unanswered++
		if err := r.effect(p, -1, "no response was seen before the session ended (outcome unknown)"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.rec.Finish(capture.EndOptions{Signers: r.signers, Reason: reason}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Unanswered is the number of tool calls left without a response.
func (r *Recording) Unanswered() int { return r.unanswered }
