package derive

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"io"
	"strings"
)

// ImportFormatATW010 names the agent-trace-witness 0.1.0 files import reads.
const ImportFormatATW010 = "atw-0.1.0"

// Legacy formats recorded in Event.Legacy.Format.
const (
	legacyATWEvents   = "atw-0.1.0-events"
	LegacyATWCassette = "atw-0.1.0-cassette"
)

// maxImportLine is the longest line import accepts.
const maxImportLine = 16 << 20

// ImportOptions control an import.
type ImportOptions struct {
	Name     string            // the input's file name, for errors and the header notes (base name only)
	TS       string            // ts of the header and end lines (and of cassette lines that carry none)
	Signers  []eventlog.Signer // sign the session_end
	Redactor *Redactor
	OnEvent  func(e *eventlog.Event) // called after each imported event is written
}

// ImportReport says what an import did.
type ImportReport struct {
	Format  string   `json:"format"` // LegacyATWEvents or LegacyATWCassette
	Events  int      `json:"events"` // choke-point events written
	Paired  int      `json:"paired"` // responses and effects linked to a call, outputs to an input
	Orphans []string `json:"orphans,omitempty"`
	Session string   `json:"session"`
}

// atwLogLine is one line of a 0.1.0 events.jsonl.
type atwLogLine struct {
	PayloadSHA256 *string `json:"payload_sha256"`
	Role          *string `json:"role"`
	SealRef       *string `json:"seal_ref"`
	Tool          *string `json:"tool"`
	TS            *string `json:"ts"`
	Type          *string `json:"type"`
	Unsealed      *bool   `json:"unsealed"`
}

// atwCassetteLine is one line of a 0.1.0 cassette.
type atwCassetteLine struct {
	Timestamp *string         `json:"timestamp"`
	TS        *string         `json:"ts"`
	Type      *string         `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// atwLine is a parsed 0.1.0 line of either format.
type atwLine struct {
	line    int64
	kind    eventlog.Kind
	tool    string
	role    string
	ts      string
	hash    string          // log: the 0.1.0 payload_sha256
	sealRef string          // log
	unseal  *bool           // log
	payload json.RawMessage // cassette: the unwrapped payload
	effect  *eventlog.Effect
	isError *bool
}

func importErr(name string, line int64, field, format string, args ...any) error {
	pe := &eventlog.ParseError{File: name, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
	return exitcode.New(exitcode.Tampered, pe, "the input is not an agent-trace-witness 0.1.0 event log or cassette (see docs/formats/events.md, section import)")
}

// detectATW returns LegacyATWEvents or LegacyATWCassette for a first line.
func detectATW(raw []byte) (string, bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return "", false
	}
	_, hasHash := keys["payload_sha256"]
	_, hasPayload := keys["payload"]
	_, hasType := keys["type"]
	switch {
	case hasType && hasHash:
		return legacyATWEvents, true
	case hasType && hasPayload:
		return LegacyATWCassette, true
	}
	return "", false
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

func fieldOf(err error) (string, error) {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return ute.Field, fmt.Errorf("expected %s, got %s", ute.Type, ute.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name := strings.TrimSuffix(strings.TrimPrefix(f, `"`), `"`)
		if name == "" {
			name = `""`
		}
		return name, errors.New("unknown field")
	}
	return "", fmt.Errorf("not a JSON object: %w", err)
}

func choke(t string) (eventlog.Kind, bool) {
	for _, k := range eventlog.ChokePoints {
		if string(k) == t {
			return k, true
		}
	}
	return "", false
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// parseATWLogLine parses one line of a 0.1.0 event log.
func parseATWLogLine(raw []byte, name string, line int64) (*atwLine, error) {
	var l atwLogLine
	if err := strictDecode(raw, &l); err != nil {
		f, e := fieldOf(err)
		return nil, importErr(name, line, f, "%v", e)
	}
	for _, req := range []struct {
		name string
		ok   bool
	}{{"payload_sha256", l.PayloadSHA256 != nil}, {"seal_ref", l.SealRef != nil}, {"ts", l.TS != nil}, {"type", l.Type != nil}, {"unsealed", l.Unsealed != nil}} {
		if !req.ok {
			return nil, importErr(name, line, req.name, "missing (0.1.0 lines have payload_sha256, role, seal_ref, tool, ts, type, unsealed)")
		}
	}
	k, ok := choke(*l.Type)
	if !ok {
		return nil, importErr(name, line, "type", "%q is not one of tool_call, tool_response, model_input, model_output, external_effect", *l.Type)
	}
	if !isHex64(*l.PayloadSHA256) {
		return nil, importErr(name, line, "payload_sha256", "must be 64 lowercase hex characters")
	}
	if *l.TS == "" {
		return nil, importErr(name, line, "ts", "empty")
	}
	out := &atwLine{line: line, kind: k, ts: *l.TS, hash: *l.PayloadSHA256, sealRef: *l.SealRef, unseal: l.Unsealed}
	switch k {
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		if l.Role == nil || *l.Role == "" {
			return nil, importErr(name, line, "role", "a %s needs a role", k)
		}
		out.role = *l.Role
	default:
		if l.Tool == nil || *l.Tool == "" {
			return nil, importErr(name, line, "tool", "a %s needs a tool", k)
		}
		out.tool = *l.Tool
	}
	return out, nil
}

// atwCassettePayload turns a 0.1.0 cassette payload into JSON, as 0.1.0's
// from_cassette read it: an even-length hex string is bytes (JSON when they
// parse), other strings are text, null is empty.
func atwCassettePayload(p json.RawMessage) (json.RawMessage, bool) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return nil, false
	}
	if p[0] == '"' {
		var s string
		if json.Unmarshal(p, &s) == nil && len(s) > 0 && len(s)%2 == 0 {
			if b, err := hex.DecodeString(s); err == nil {
				if json.Valid(b) {
					return json.RawMessage(b), true
				}
			}
		}
	}
	return p, true
}

// parseATWCassetteLine parses one line of a 0.1.0 cassette and unwraps its payload.
func parseATWCassetteLine(raw []byte, name string, line int64, defTS string) (*atwLine, error) {
	var l atwCassetteLine
	if err := strictDecode(raw, &l); err != nil {
		f, e := fieldOf(err)
		return nil, importErr(name, line, f, "%v", e)
	}
	if l.Type == nil {
		return nil, importErr(name, line, "type", "missing (0.1.0 cassette lines have timestamp, type, payload)")
	}
	k, ok := choke(*l.Type)
	if !ok {
		return nil, importErr(name, line, "type", "%q is not one of tool_call, tool_response, model_input, model_output, external_effect", *l.Type)
	}
	out := &atwLine{line: line, kind: k, ts: defTS}
	if l.TS != nil && *l.TS != "" {
		out.ts = *l.TS
	}
	if l.Timestamp != nil && *l.Timestamp != "" {
		out.ts = *l.Timestamp
	}
	p, ok := atwCassettePayload(l.Payload)
	if !ok {
		if k != eventlog.KindModelInput && k != eventlog.KindModelOutput {
			return nil, importErr(name, line, "payload", "a %s payload names its tool; this one is empty", k)
		}
		out.role = map[eventlog.Kind]string{eventlog.KindModelInput: "user", eventlog.KindModelOutput: "assistant"}[k]
		return out, nil
	}
	var w map[string]json.RawMessage
	if err := json.Unmarshal(p, &w); err != nil || w == nil {
		return nil, importErr(name, line, "payload", "not a 0.1.0 wrapper object ({\"tool\",\"args\"|\"result\"|\"effect\"} or {\"content\",\"role\"})")
	}
	str := func(key string) (string, error) {
		v, ok := w[key]
		if !ok {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", importErr(name, line, "payload."+key, "expected a string")
		}
		return s, nil
	}
	var body string
	switch k {
	case eventlog.KindToolCall:
		body = "args"
	case eventlog.KindToolResponse:
		body = "result"
	case eventlog.KindExternalEffect:
		body = "effect"
	default:
		body = "content"
	}
	for key := range w {
		if key != body && key != "tool" && key != "role" {
			return nil, importErr(name, line, "payload."+key, "unexpected in a %s wrapper", k)
		}
	}
	if k == eventlog.KindModelInput || k == eventlog.KindModelOutput {
		role, err := str("role")
		if err != nil {
			return nil, err
		}
		if role == "" {
			role = map[eventlog.Kind]string{eventlog.KindModelInput: "user", eventlog.KindModelOutput: "assistant"}[k]
		}
		out.role = role
	} else {
		tool, err := str("tool")
		if err != nil {
			return nil, err
		}
		if tool == "" {
			return nil, importErr(name, line, "payload.tool", "a %s needs a tool", k)
		}
		out.tool = tool
	}
	if v, ok := w[body]; ok {
		out.payload = v
	}
	switch k {
	case eventlog.KindToolResponse:
		out.isError = isErrorOf(json.RawMessage(out.payload))
	case eventlog.KindExternalEffect:
		out.effect = atwEffect(out.payload)
	}
	return out, nil
}

// atwEffect reads op and target from a 0.1.0 effect payload when it has them.
func atwEffect(p json.RawMessage) *eventlog.Effect {
	e := &eventlog.Effect{Op: "other", Reason: "imported from atw-0.1.0; the effect payload names no op"}
	var obj map[string]json.RawMessage
	if len(p) == 0 || json.Unmarshal(p, &obj) != nil {
		return e
	}
	var s string
	if v, ok := obj["op"]; ok && json.Unmarshal(v, &s) == nil && s != "" {
		e.Op = s
		e.Reason = "imported from atw-0.1.0; op from the effect payload"
	}
	for _, key := range []string{"target", "path", "url"} {
		if v, ok := obj[key]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			e.Target = s
			break
		}
	}
	return e
}

// lineScanner yields non-blank lines with their 1-based numbers.
type lineScanner struct {
	br   *bufio.Reader
	name string
	line int64
}

func (s *lineScanner) next() ([]byte, error) {
	for {
		var out []byte
		for {
			chunk, err := s.br.ReadSlice('\n')
			if len(out)+len(chunk) > maxImportLine+1 {
				return nil, importErr(s.name, s.line+1, "", "line longer than %d bytes", maxImportLine)
			}
			out = append(out, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && len(out) == 0 {
				return nil, io.EOF
			}
			if err != nil && err != io.EOF {
				return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read %s: %w", s.name, err), "")
			}
			break
		}
		s.line++
		t := bytes.TrimSpace(out)
		if len(t) == 0 {
			continue
		}
		if err := jsonlimit.CheckIn(out, s.name, s.line); err != nil {
			return nil, exitcode.New(exitcode.Tampered, &eventlog.ParseError{File: s.name, Line: s.line, Err: err},
				"the input is not an agent-trace-witness 0.1.0 event log or cassette (see docs/formats/events.md, section import)")
		}
		return t, nil
	}
}

// ImportATW reads an agent-trace-witness 0.1.0 event log or cassette from r
// (the format is detected from the first line) and writes a witness event
// log to w, streaming. Lines carry no ids, so a tool_response pairs with the
// earliest open tool_call of the same tool, an external_effect names the
// latest tool_call of its tool, and a model_output names the latest
// model_input; the session header says so. Every event has source
// "imported". Malformed input yields an error naming file, line and field
// (exit code Tampered); lines written before it stay written.
//
// The steps, each checkable on its own: the first line fixes the format
// (openATW); the header says where the log came from and how it was paired
// (atwHeader); each line becomes one event with its hash or its redacted
// payload (atwImport.event); pairing follows the rules above (atwPairing);
// every later line must be of the first line's format (atwImport.next);
// the end is signed (FinishWith).
func ImportATW(r io.Reader, w io.Writer, o ImportOptions) (*ImportReport, error) {
	im, cur, err := openATW(r, o)
	if err != nil {
		return nil, err
	}
	lw, err := eventlog.StartLog(w, im.header, o.TS, eventlog.SourceImported)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, err, "")
	}
	rep := &ImportReport{Format: im.format, Session: lw.Session()}
	pairs := newATWPairing()
	for cur != nil {
		e, err := im.event(cur)
		if err != nil {
			return rep, err
		}
		pairs.link(e, cur, eventlog.EventID(lw.Count()), rep)
		if err := lw.Append(e); err != nil {
			return rep, exitcode.New(exitcode.Failure, fmt.Errorf("import %s line %d: %w", im.name, cur.line, err), "")
		}
		rep.Events++
		if o.OnEvent != nil {
			o.OnEvent(e)
		}
		if cur, err = im.next(); err != nil {
			return rep, err
		}
	}
	if err := eventlog.FinishWith(lw, eventlog.EndOptions{Signers: o.Signers, TS: o.TS, Reason: "imported", Source: eventlog.SourceImported}); err != nil {
		return rep, exitcode.New(exitcode.Failure, err, "")
	}
	return rep, nil
}

// atwImport is one import under way: its input, the format its first line
// fixed, and the header written from that line.
type atwImport struct {
	o      ImportOptions
	name   string
	sc     *lineScanner
	format string // LegacyATWEvents or LegacyATWCassette
	header *eventlog.Header
}

// openATW reads the first line, which fixes the format of the whole file:
// an empty file, or a first line of neither 0.1.0 format, is refused before
// anything is written. It returns the import and the first line, parsed.
func openATW(r io.Reader, o ImportOptions) (*atwImport, *atwLine, error) {
	im := &atwImport{o: o, name: o.Name}
	if im.name == "" {
		im.name = "input"
	}
	im.sc = &lineScanner{br: bufio.NewReaderSize(r, 64<<10), name: im.name}
	first, err := im.sc.next()
	if err == io.EOF {
		return nil, nil, importErr(im.name, 1, "", "empty file: nothing to import")
	}
	if err != nil {
		return nil, nil, err
	}
	format, ok := detectATW(first)
	if !ok {
		return nil, nil, importErr(im.name, im.sc.line, "", "neither a 0.1.0 event log line (payload_sha256, type, ...) nor a cassette line (timestamp, type, payload)")
	}
	im.format = format
	l1, err := im.parse(first, im.sc.line)
	if err != nil {
		return nil, nil, err
	}
	im.header = atwHeader(format, im.name, l1, o.Redactor)
	return im, l1, nil
}

// parse reads one line in the import's format.
func (im *atwImport) parse(raw []byte, line int64) (*atwLine, error) {
	if im.format == legacyATWEvents {
		return parseATWLogLine(raw, im.name, line)
	}
	return parseATWCassetteLine(raw, im.name, line, im.o.TS)
}

// next returns the next line, parsed, or nil at the end of the input. A
// line of the other 0.1.0 format is refused: one file, one format.
func (im *atwImport) next() (*atwLine, error) {
	raw, err := im.sc.next()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if f, ok := detectATW(raw); ok && f != im.format {
		return nil, importErr(im.name, im.sc.line, "", "a %s line in a %s file", f, im.format)
	}
	return im.parse(raw, im.sc.line)
}

// atwHeader is the session header of an import: it names the input and
// its format, states the pairing rule (0.1.0 lines carry no ids), and, for
// an event log, takes the seal digest from the first line's seal_ref.
func atwHeader(format, name string, l1 *atwLine, red *Redactor) *eventlog.Header {
	h := &eventlog.Header{ImportedFrom: ImportFormatATW010, Pairing: eventlog.PairingEarliestOpenSameTool}
	if format == legacyATWEvents {
		h.Seal = &eventlog.SealRef{Digest: l1.sealRef}
		h.Notes = []string{
			fmt.Sprintf("imported from %s, an agent-trace-witness 0.1.0 event log", name),
			"0.1.0 lines carry no ids: a tool_response names the earliest open tool_call of the same tool, an external_effect the latest tool_call of its tool, a model_output the latest model_input",
			"payload_sha256 is the 0.1.0 hash of the wrapper object ({\"args\"|\"result\"|\"effect\": payload, \"tool\": tool} or {\"content\": payload, \"role\": role}); 0.1.0 never stored payloads, so none are present",
			fmt.Sprintf("seal.digest is the 0.1.0 seal_ref of the first line (%s); lines with another seal_ref keep it in legacy.seal_ref; legacy.unsealed keeps each line's unsealed flag", l1.sealRef),
		}
	} else {
		h.Notes = []string{
			fmt.Sprintf("imported from %s, an agent-trace-witness 0.1.0 cassette", name),
			"0.1.0 lines carry no ids: a tool_response names the earliest open tool_call of the same tool, an external_effect the latest tool_call of its tool, a model_output the latest model_input",
			"payloads are the 0.1.0 wrapper bodies (args, result, effect, content); payload_sha256 is the witness hash of that body",
		}
	}
	if red != nil {
		h.Redaction = red.Info()
	}
	return h
}

// event turns one line into an event (not yet paired). An event log line
// keeps its 0.1.0 hash as given (and its seal_ref when it differs from the
// header's); a cassette line's payload is redacted before it is set, so an
// unredacted payload never reaches the log.
func (im *atwImport) event(cur *atwLine) (*eventlog.Event, error) {
	e := &eventlog.Event{Kind: cur.kind, TS: cur.ts, Source: eventlog.SourceImported, Tool: cur.tool, Role: cur.role,
		Legacy: &eventlog.Legacy{Format: im.format, Line: cur.line, Unsealed: cur.unseal}, IsError: cur.isError, Effect: cur.effect}
	if im.format == legacyATWEvents {
		e.PayloadSHA256 = cur.hash
		if cur.sealRef != im.header.Seal.Digest {
			e.Legacy.SealRef = cur.sealRef
		}
		return e, nil
	}
	if cur.payload == nil {
		return e, nil
	}
	p := cur.payload
	if im.o.Redactor != nil {
		red, changed, err := im.o.Redactor.Payload(cur.kind, p)
		if err != nil {
			return nil, importErr(im.name, cur.line, "payload", "redact: %v", err)
		}
		p, e.Redacted = red, changed
	}
	if err := eventlog.SetPayload(e, p); err != nil {
		return nil, importErr(im.name, cur.line, "payload", "%v", err)
	}
	return e, nil
}

// atwPairing links the events of an import by the documented rules, since
// 0.1.0 lines carry no ids.
type atwPairing struct {
	open      map[string][]string // tool -> open call ids, earliest first
	lastCall  map[string]string   // tool -> latest call id
	lastInput string              // latest model_input id
}

func newATWPairing() *atwPairing {
	return &atwPairing{open: map[string][]string{}, lastCall: map[string]string{}}
}

// link sets e's Call or Input (e will have id): a tool_response takes the
// earliest open tool_call of its tool (closing it), an external_effect the
// latest tool_call of its tool, a model_output the latest model_input. A
// response, effect or output left without a partner is marked orphan and
// listed in rep; the others count as paired.
func (p *atwPairing) link(e *eventlog.Event, cur *atwLine, id string, rep *ImportReport) {
	switch cur.kind {
	case eventlog.KindToolCall:
		p.open[cur.tool] = append(p.open[cur.tool], id)
		p.lastCall[cur.tool] = id
	case eventlog.KindToolResponse:
		if q := p.open[cur.tool]; len(q) > 0 {
			e.Call = q[0]
			p.open[cur.tool] = q[1:]
			if len(p.open[cur.tool]) == 0 {
				delete(p.open, cur.tool)
			}
		}
	case eventlog.KindExternalEffect:
		e.Call = p.lastCall[cur.tool]
	case eventlog.KindModelOutput:
		e.Input = p.lastInput
	case eventlog.KindModelInput:
		p.lastInput = id
	}
	if cur.kind == eventlog.KindToolResponse || cur.kind == eventlog.KindExternalEffect || cur.kind == eventlog.KindModelOutput {
		if e.Call == "" && e.Input == "" {
			e.Legacy.Orphan = true
			rep.Orphans = append(rep.Orphans, fmt.Sprintf("line %d: %s of %s", cur.line, cur.kind, cur.tool+cur.role))
		} else {
			rep.Paired++
		}
	}
}
