package derive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendInput is one line of `witness capture append` input: an event
// reported by an agent framework. Which fields a line may carry depends on
// its kind; docs/formats/events.md lists them.
type AppendInput struct {
	Kind      eventlog.Kind     `json:"kind"`
	Ref       string            `json:"ref,omitempty"` // a label other lines of the same input may link to
	TS        string            `json:"ts,omitempty"`
	Role      string            `json:"role,omitempty"`      // model_input, model_output
	Content   json.RawMessage   `json:"content,omitempty"`   // model_input, model_output
	Input     string            `json:"input,omitempty"`     // model_output: ref or id of its model_input
	Tool      string            `json:"tool,omitempty"`      // tool_call, tool_response, external_effect
	Arguments json.RawMessage   `json:"arguments,omitempty"` // tool_call
	Cause     string            `json:"cause,omitempty"`     // tool_call: ref or id of the model_output; message: of any event
	Result    json.RawMessage   `json:"result,omitempty"`    // tool_response
	IsError   *bool             `json:"is_error,omitempty"`  // tool_response
	Call      string            `json:"call,omitempty"`      // tool_response, external_effect: ref or id of the tool_call
	Effect    *eventlog.Effect  `json:"effect,omitempty"`    // external_effect
	Detail    json.RawMessage   `json:"detail,omitempty"`    // external_effect
	Message   *eventlog.Message `json:"message,omitempty"`   // message
}

// allowed fields per kind (besides kind, ref, ts).
var appendFields = map[eventlog.Kind][]string{
	eventlog.KindModelInput:     {"role", "content"},
	eventlog.KindModelOutput:    {"role", "content", "input"},
	eventlog.KindToolCall:       {"tool", "arguments", "cause"},
	eventlog.KindToolResponse:   {"tool", "result", "is_error", "call"},
	eventlog.KindExternalEffect: {"tool", "effect", "detail", "call"},
	eventlog.KindMessage:        {"message", "cause"},
}

// ParseAppendInput parses and validates one input line. The error names
// the field at fault.
func ParseAppendInput(line []byte) (*AppendInput, error) {
	if err := jsonlimit.Check(line); err != nil {
		return nil, err
	}
	if err := checkStrings(line); err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil || keys == nil {
		return nil, errors.New("not a JSON object")
	}
	var kind eventlog.Kind
	if k, ok := keys["kind"]; ok {
		var ks string
		if err := json.Unmarshal(k, &ks); err != nil {
			return nil, fieldErr("kind", errors.New(`expected a string`))
		}
		kind = eventlog.Kind(ks)
	}
	if kind == "" {
		return nil, fieldErr("kind", errors.New(`missing (one of model_input, model_output, tool_call, tool_response, external_effect, message)`))
	}
	allowed, ok := appendFields[kind]
	if !ok {
		return nil, fieldErr("kind", fmt.Errorf(`%q cannot be appended (one of model_input, model_output, tool_call, tool_response, external_effect, message)`, kind))
	}
	for k := range keys {
		if k == "kind" || k == "ref" || k == "ts" {
			continue
		}
		found := false
		for _, a := range allowed {
			if a == k {
				found = true
			}
		}
		if !found {
			return nil, fieldErr(jsonpath.Member("", k), fmt.Errorf("not allowed on a %s (allowed: kind, ref, ts, %s)", kind, strings.Join(allowed, ", ")))
		}
	}
	var in AppendInput
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		f, e := fieldOf(err)
		if f != "" {
			return nil, fieldErr(f, fmt.Errorf("%v", e))
		}
		return nil, e
	}
	switch in.Kind {
	case eventlog.KindToolCall, eventlog.KindToolResponse:
		if in.Tool == "" {
			return nil, fieldErr("tool", fmt.Errorf(`missing (a %s names its tool)`, in.Kind))
		}
	case eventlog.KindExternalEffect:
		if in.Effect == nil || in.Effect.Op == "" {
			return nil, fieldErr("effect", errors.New(`missing, or without "op" (read, write, overwrite, delete, send, payment, exec, other)`))
		}
	case eventlog.KindMessage:
		if in.Message == nil {
			return nil, fieldErr("message", errors.New(`missing`))
		}
		if field, err := in.Message.Validate(); err != nil {
			return nil, fieldErr(field, err)
		}
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		if len(in.Content) == 0 {
			return nil, fieldErr("content", errors.New(`missing`))
		}
	}
	for _, raw := range []struct {
		name string
		v    json.RawMessage
	}{{"content", in.Content}, {"arguments", in.Arguments}, {"result", in.Result}, {"detail", in.Detail}} {
		if len(raw.v) > 0 {
			if _, _, err := eventlog.PayloadDigest(raw.v); err != nil {
				return nil, fieldErr(raw.name, fmt.Errorf("%v", err))
			}
		}
	}
	return &in, nil
}

// AppendOptions control AppendLog.
type AppendOptions struct {
	InputName string                     // for errors ("stdin")
	Verifier  eventlog.SignatureVerifier // checks the existing log's signatures (untrusted ones are accepted)
	Signers   []eventlog.Signer          // sign the new session_end
	KeepOpen  bool                       // do not write a session_end after appending
	// AllowUnsigned lets the new end be signed over a log whose last end is
	// unsigned, signed only by untrusted keys, or missing: the signature then
	// vouches for lines no trusted key had sealed. Without it such a log is
	// refused whenever Signers are given, so that appending cannot launder a
	// forged log under a genuine key.
	AllowUnsigned bool
	Clock         func() string      // ts of events that carry none, and of the end
	Redactor      *Redactor          // redact payloads before writing
	OnEvent       func(AppendResult) // called after each event is written
}

// AppendResult is one appended event.
type AppendResult struct {
	Line int64         `json:"line"` // input line
	ID   string        `json:"id"`
	Kind eventlog.Kind `json:"kind"`
	Ref  string        `json:"ref,omitempty"`
}

// AppendReport says what AppendLog did.
type AppendReport struct {
	Appended []AppendResult `json:"appended"`
	Reopened bool           `json:"reopened"` // the log had ended; its old end stays as a checkpoint
	Ended    bool           `json:"ended"`    // a new session_end was written
	Signed   int            `json:"signed"`   // signatures on the new end
}

// AppendLog appends reported events, read as JSONL from in, to the event
// log at path. The existing log is verified first: a tampered log is refused
// (Tampered), one with a cut-off last line too (Incomplete). A log that has
// ended is reopened: its session_end stays where it is, as a signed
// checkpoint, and the new events follow it. Every event is written as soon
// as its line is read, with source "reported", so an error on input line N
// loses nothing before it; the log is then ended (unless KeepOpen) and the
// error names the input line and field (Usage).
//
// The steps, each checkable on its own: the log is opened without following
// a symlink and locked (openLogLocked); its chain is verified and a broken
// or cut-off log refused (verifyForAppend); a signer never vouches for lines
// no trusted key sealed (requireVouched); writing resumes after the last
// line, continuing the chain (resumeAppend); input lines are written one by
// one, links resolved only to earlier events (appender.appendAll); the log
// is ended and the input error reported (finishAppend).
func AppendLog(path string, in io.Reader, o AppendOptions) (*AppendReport, error) {
	if o.InputName == "" {
		o.InputName = "stdin"
	}
	if o.Clock == nil {
		o.Clock = func() string { return eventlog.Timestamp(nil) }
	}
	f, unlock, err := openLogLocked(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer unlock()
	rep, kindOf, err := verifyForAppend(f, path, o)
	if err != nil {
		return nil, err
	}
	if err := requireVouched(path, rep, o); err != nil {
		return nil, err
	}
	a, err := resumeAppend(f, path, rep, kindOf, o)
	if err != nil {
		return nil, err
	}
	ar := &AppendReport{Reopened: rep.Ended}
	lineNo, inErr := a.appendAll(in, o, ar)
	return finishAppend(a.w, ar, o, lineNo, inErr)
}

// openLogLocked opens the log for reading and writing, never through a
// symlink, and takes its lock (held until unlock is called), so that two
// appends never interleave.
func openLogLocked(path string) (f *os.File, unlock func(), err error) {
	f, err = os.OpenFile(path, os.O_RDWR|atomicfile.NoFollow, 0) // never through a symlink
	if err != nil {
		return nil, nil, exitcode.Input("open event log", err, "check the path given to --events; append to a log that 'witness capture' or 'witness import' wrote")
	}
	unlock, err = lockLog(f)
	if err != nil {
		f.Close()
		return nil, nil, exitcode.New(exitcode.Failure, err, "")
	}
	return f, unlock, nil
}

// linkKind is the kind an event is recorded under for link checks: only
// tool calls, model inputs and model outputs can be linked to by kind.
func linkKind(k eventlog.Kind) eventlog.Kind {
	switch k {
	case eventlog.KindToolCall, eventlog.KindModelInput, eventlog.KindModelOutput:
		return k
	}
	return ""
}

// verifyForAppend verifies the whole existing log (unsigned ends are
// accepted) and refuses to extend a broken chain (Tampered) or a log whose
// last line was cut off (Incomplete); a log left open or ending in a
// recorded failure may be continued. It returns the report and the link
// kind of every existing event id.
func verifyForAppend(f *os.File, path string, o AppendOptions) (*eventlog.LogReport, map[string]eventlog.Kind, error) {
	kindOf := map[string]eventlog.Kind{}
	rep, verr := eventlog.VerifyLog(f, path, eventlog.VerifyLogOptions{Verifier: o.Verifier, AllowUnsigned: true, OnEvent: func(_ int64, e *eventlog.Event) {
		kindOf[e.ID] = linkKind(e.Kind)
	}})
	switch rep.Status {
	case eventlog.StatusTampered:
		return nil, nil, exitcode.New(exitcode.Tampered, fmt.Errorf("refusing to append to %s: %w", path, verr), "an append would extend a broken chain; keep the log as evidence and start a new capture")
	case eventlog.StatusIncomplete:
		if rep.Lines == 0 || !appendable(rep) {
			return nil, nil, exitcode.New(exitcode.Incomplete, fmt.Errorf("refusing to append to %s: %w", path, verr), "its last line was cut off; appending would hide where")
		}
	}
	if verr != nil && rep.Status != eventlog.StatusIncomplete && rep.Status != eventlog.StatusUnsigned {
		return nil, nil, exitcode.New(exitcode.Failure, verr, "")
	}
	return rep, kindOf, nil
}

// requireVouched refuses to sign a new end over a log whose last end no
// key of the verifier signed (or that has no end), unless the caller
// vouches for it (AllowUnsigned) or leaves the log open: appending must not
// launder a forged log under a genuine key.
func requireVouched(path string, rep *eventlog.LogReport, o AppendOptions) error {
	if len(o.Signers) == 0 || o.KeepOpen || o.AllowUnsigned || vouched(rep) {
		return nil
	}
	why := "it has no session_end"
	if rep.Ended {
		why = "its session_end has no signature by a key the keyring holds"
	}
	return exitcode.New(exitcode.Tampered,
		fmt.Errorf("refusing to sign over %s: %s, so signing the new end would vouch for lines no trusted key sealed", path, why),
		"pass --keyring with the key that signed it, or append with --allow-unsigned to vouch for them with your key")
}

// appender writes reported events after the existing log and resolves
// their links (refs of earlier input lines, ids of earlier events).
type appender struct {
	w         *eventlog.Writer
	rec       *Recorder
	kindOf    map[string]eventlog.Kind // id -> link kind, of the log's events and those appended now
	refs      map[string]string        // ref -> id
	openCalls map[string][]string      // tool -> open call ids appended now, earliest first
	lastCall  map[string]string        // tool -> latest call id appended now
}

// resumeAppend positions f after the log's last line and continues its
// chain there: the next event takes the next seq and links to the head
// hash, and a model_output without input names the log's latest
// model_input.
func resumeAppend(f *os.File, path string, rep *eventlog.LogReport, kindOf map[string]eventlog.Kind, o AppendOptions) (*appender, error) {
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("seek %s: %w", path, err), "")
	}
	w := eventlog.ResumeWriter(f, rep.Session, rep.Lines-1, rep.Head)
	rec := NewRecorder(w, RecorderOptions{Source: eventlog.SourceReported, Clock: o.Clock, Redactor: o.Redactor})
	if id := rep.Last[eventlog.KindModelInput]; id != "" {
		rec.lastInput = id
	}
	return &appender{w: w, rec: rec, kindOf: kindOf, refs: map[string]string{},
		openCalls: map[string][]string{}, lastCall: map[string]string{}}, nil
}

// appendAll writes one event per input line, each as soon as it is read.
// The first line that cannot be read or appended stops the input; what was
// written before it stays. It returns the number of the last line read and
// the error that stopped it, naming input and line.
func (a *appender) appendAll(in io.Reader, o AppendOptions, ar *AppendReport) (lineNo int64, inErr error) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		raw, rerr := readInputLine(br)
		if rerr == io.EOF {
			return lineNo, nil
		}
		lineNo++
		if rerr != nil {
			return lineNo, atLine(o.InputName, lineNo, rerr)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := jsonlimit.CheckIn(raw, o.InputName, lineNo); err != nil {
			return lineNo, err
		}
		id, kind, ref, err := a.appendOne(raw)
		if err != nil {
			return lineNo, atLine(o.InputName, lineNo, err)
		}
		a.kindOf[id] = linkKind(kind)
		res := AppendResult{Line: lineNo, ID: id, Kind: kind, Ref: ref}
		ar.Appended = append(ar.Appended, res)
		if o.OnEvent != nil {
			o.OnEvent(res)
		}
	}
}

// finishAppend ends the log (unless KeepOpen) with a new session_end whose
// reason names the input line that stopped the append, if one did, and
// reports that line's error as a usage error.
func finishAppend(w *eventlog.Writer, ar *AppendReport, o AppendOptions, lineNo int64, inErr error) (*AppendReport, error) {
	if !o.KeepOpen {
		reason := "appended"
		if inErr != nil {
			reason = fmt.Sprintf("append stopped at %s line %d", o.InputName, lineNo)
		}
		if err := eventlog.FinishWith(w, eventlog.EndOptions{Signers: o.Signers, TS: o.Clock(), Reason: reason, Source: eventlog.SourceReported}); err != nil {
			return ar, exitcode.New(exitcode.Failure, err, "")
		}
		ar.Ended, ar.Signed = true, len(o.Signers)
	}
	if inErr != nil {
		return ar, exitcode.New(exitcode.Usage, inErr, "the events before this line were appended; fix the line and append the rest")
	}
	return ar, nil
}

// readInputLine reads one line (without its newline) of at most MaxImportLine bytes.
func readInputLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > maxImportLine+1 {
			return nil, fmt.Errorf("line longer than %d bytes", maxImportLine)
		}
		out = append(out, chunk...)
		switch err {
		case nil:
			return out[:len(out)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(out) == 0 {
				return nil, io.EOF
			}
			return out, nil
		default:
			return nil, err
		}
	}
}

// resolve turns a link target (a ref of an earlier input line, or the id of
// an earlier event) into an event id, and checks that it names an event of
// kind want ("" for any kind). An empty target stays empty.
func (a *appender) resolve(field, target string, want eventlog.Kind) (string, error) {
	if target == "" {
		return "", nil
	}
	id := target
	if r, ok := a.refs[target]; ok {
		id = r
	}
	k, ok := a.kindOf[id]
	if !ok {
		return "", fieldErr(field, fmt.Errorf("%q is neither a ref of an earlier input line nor the id of an event in the log", target))
	}
	if want != "" && k != want {
		return "", fieldErr(field, fmt.Errorf("%q is not a %s", target, want))
	}
	return id, nil
}

// appendOne parses one input line and writes its event. A ref may be used
// once; links resolve to earlier events only (resolve).
func (a *appender) appendOne(raw []byte) (string, eventlog.Kind, string, error) {
	in, err := ParseAppendInput(raw)
	if err != nil {
		return "", "", "", err
	}
	if in.Ref != "" {
		if _, dup := a.refs[in.Ref]; dup {
			return "", "", "", fieldErr("ref", fmt.Errorf("%q was used by an earlier line", in.Ref))
		}
	}
	var id string
	switch in.Kind {
	case eventlog.KindModelInput:
		id, err = a.rec.ModelInput(ModelInputEvent{Role: in.Role, Content: in.Content, TS: in.TS})
	case eventlog.KindModelOutput:
		id, err = a.modelOutput(in)
	case eventlog.KindToolCall:
		id, err = a.toolCall(in)
	case eventlog.KindToolResponse:
		id, err = a.toolResponse(in)
	case eventlog.KindExternalEffect:
		id, err = a.externalEffect(in)
	case eventlog.KindMessage:
		var cause string
		if cause, err = a.resolve("cause", in.Cause, ""); err == nil {
			id, err = a.rec.message(messageEvent{Message: *in.Message, Cause: cause, TS: in.TS})
		}
	}
	if err != nil {
		return "", "", "", err
	}
	if in.Ref != "" {
		a.refs[in.Ref] = id
	}
	return id, in.Kind, in.Ref, nil
}

// modelOutput writes a model_output; its input must be a model_input.
func (a *appender) modelOutput(in *AppendInput) (string, error) {
	input, err := a.resolve("input", in.Input, eventlog.KindModelInput)
	if err != nil {
		return "", err
	}
	return a.rec.ModelOutput(ModelOutputEvent{Role: in.Role, Content: in.Content, Input: input, TS: in.TS})
}

// toolCall writes a tool_call (its cause must be a model_output) and opens
// it for the responses that follow.
func (a *appender) toolCall(in *AppendInput) (string, error) {
	cause, err := a.resolve("cause", in.Cause, eventlog.KindModelOutput)
	if err != nil {
		return "", err
	}
	var args any
	if len(in.Arguments) > 0 {
		args = in.Arguments
	}
	id, err := a.rec.ToolCall(ToolCallEvent{Tool: in.Tool, Arguments: args, Cause: cause, TS: in.TS})
	if err == nil {
		a.openCalls[in.Tool] = append(a.openCalls[in.Tool], id)
		a.lastCall[in.Tool] = id
	}
	return id, err
}

// toolResponse writes a tool_response. Its call must be a tool_call; without
// one it answers the earliest call of its tool appended now and still open,
// and with none open the line is refused. The call answered is closed.
func (a *appender) toolResponse(in *AppendInput) (string, error) {
	call, err := a.resolve("call", in.Call, eventlog.KindToolCall)
	if err != nil {
		return "", err
	}
	if call == "" {
		q := a.openCalls[in.Tool]
		if len(q) == 0 {
			return "", fieldErr("call", fmt.Errorf("missing, and no call of tool %q appended before it is open", in.Tool))
		}
		call = q[0]
	}
	q := a.openCalls[in.Tool]
	for i, c := range q {
		if c == call {
			a.openCalls[in.Tool] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	var result any
	if len(in.Result) > 0 {
		result = in.Result
	}
	return a.rec.ToolResponse(ToolResponseEvent{Tool: in.Tool, Call: call, Result: result, IsError: in.IsError, TS: in.TS})
}

// externalEffect writes an external_effect; its call must be a tool_call,
// and without one it names the latest call of its tool appended now.
func (a *appender) externalEffect(in *AppendInput) (string, error) {
	call, err := a.resolve("call", in.Call, eventlog.KindToolCall)
	if err != nil {
		return "", err
	}
	if call == "" && in.Tool != "" {
		call = a.lastCall[in.Tool]
	}
	var detail any
	if len(in.Detail) > 0 {
		detail = in.Detail
	}
	return a.rec.ExternalEffect(ExternalEffectEvent{Tool: in.Tool, Call: call, Effect: *in.Effect, Detail: detail, TS: in.TS})
}

// vouched reports whether the log's last end carries a valid signature by a
// key the verifier holds.
func vouched(rep *eventlog.LogReport) bool {
	if !rep.Ended {
		return false
	}
	for _, c := range rep.Signatures {
		if c.Status == "valid" {
			return true
		}
	}
	return false
}

// appendable reports whether an incomplete log may be continued: its only
// incomplete findings are a missing end (a log left open) and recorded
// failures, which stay in their ends and keep the log incomplete. A cut-off
// last line is never continued.
func appendable(rep *eventlog.LogReport) bool {
	if rep.FindingsDropped > 0 {
		return false
	}
	n := 0
	for _, f := range rep.Findings {
		if f.Severity != eventlog.SevIncomplete {
			continue
		}
		n++
		if f.Code != eventlog.FindNoEnd && f.Code != eventlog.FindFailure {
			return false
		}
	}
	return n == rep.Count(eventlog.SevIncomplete)
}

// fieldErr is an input line's error about one field, in the one position
// format of witness's readers once atLine places it.
func fieldErr(field string, err error) error {
	return &jsontree.Error{Field: field, Err: err}
}

// atLine places err at line lineNo of the input named name:
// "name:line: $.field: message".
func atLine(name string, lineNo int64, err error) error {
	var je *jsontree.Error
	if errors.As(err, &je) && je.File == "" {
		je.Locate(name, lineNo)
		return err
	}
	return fmt.Errorf("%s:%d: %w", name, lineNo, err)
}

// checkStrings refuses a line whose strings (member names or values, at
// any depth) hold invalid UTF-8 or a lone surrogate escape: encoding/json
// would read them as U+FFFD, and the log would then record a string the
// reporter never sent. The error names the field ("$.tool",
// "$.effect.target", "$.arguments.path") and the byte column.
func checkStrings(line []byte) error {
	if utf8.Valid(line) && !bytes.Contains(line, []byte(`\u`)) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	// path holds the member names and indexes down to the next value;
	// isKey says whether the next string token is a member name
	type frame struct {
		object bool
		index  int
		name   string
		isKey  bool
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the caller says so
	}
	stack := []frame{{object: true, isKey: true}}
	field := func() string {
		path := ""
		for _, f := range stack {
			if f.object {
				if !f.isKey {
					path = jsonpath.Member(path, f.name)
				}
			} else {
				path = jsonpath.Index(path, f.index)
			}
		}
		return path
	}
	for {
		start := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			// not JSON: the decoder's own error says so later
			return nil
		}
		end := dec.InputOffset()
		raw := line[start:end]
		// skip the separators the decoder consumed before the token
		if i := bytes.IndexAny(raw, `"`); i >= 0 {
			raw = raw[i:]
		}
		if str, ok := t.(string); ok {
			if why := badString(raw); why != "" {
				where := field()
				if where == "" {
					where = "$"
				}
				what := "a string"
				if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
					what = "a member name"
				}
				col := int(end-int64(len(raw))) + 1
				return &jsontree.Error{Col: col, Field: where, Msg: fmt.Sprintf("%s holds %s (witness records strings exactly, never with U+FFFD in their place)", what, why)}
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				stack[n-1].name, stack[n-1].isKey = str, false
				continue
			}
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, isKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// a value ended: the next token of an object is a name, of an
		// array the next element
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].isKey = true
			} else if t != json.Delim('[') {
				stack[n-1].index++
			}
		} else {
			return nil
		}
	}
}

// badString says what is wrong with the raw JSON string token s (quotes
// included): invalid UTF-8 bytes or an unpaired UTF-16 surrogate escape;
// "" when it is sound.
func badString(s []byte) string {
	if !utf8.Valid(s) {
		return "bytes that are not valid UTF-8"
	}
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' || i+6 > len(s) {
			i++
			continue
		}
		r, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16)
		if err != nil {
			return ""
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				lo, err := strconv.ParseUint(string(s[i+8:i+12]), 16, 16)
				if err == nil && lo >= 0xDC00 && lo < 0xE000 {
					i += 11
					continue
				}
			}
			return "a lone UTF-16 surrogate escape"
		case r >= 0xDC00 && r < 0xE000:
			return "a lone UTF-16 surrogate escape"
		}
		i += 5
	}
	return ""
}
