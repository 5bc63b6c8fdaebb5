package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsontree"
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
			return nil, fieldErr(k, fmt.Errorf("not allowed on a %s (allowed: kind, ref, ts, %s)", kind, strings.Join(allowed, ", ")))
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
func AppendLog(path string, in io.Reader, o AppendOptions) (*AppendReport, error) {
	if o.InputName == "" {
		o.InputName = "stdin"
	}
	if o.Clock == nil {
		o.Clock = func() string { return eventlog.Timestamp(nil) }
	}
	f, err := os.OpenFile(path, os.O_RDWR|atomicfile.NoFollow, 0) // never through a symlink
	if err != nil {
		return nil, exitcode.Input("open event log", err, "check the path given to --events; append to a log that 'witness capture' or 'witness import' wrote")
	}
	defer f.Close()
	unlock, err := lockLog(f)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, err, "")
	}
	defer unlock()
	// ids of existing events by kind, for link checks
	kindOf := map[string]eventlog.Kind{}
	rep, verr := eventlog.VerifyLog(f, path, eventlog.VerifyLogOptions{Verifier: o.Verifier, AllowUnsigned: true, OnEvent: func(_ int64, e *eventlog.Event) {
		switch e.Kind {
		case eventlog.KindToolCall, eventlog.KindModelInput, eventlog.KindModelOutput:
			kindOf[e.ID] = e.Kind
		default:
			kindOf[e.ID] = ""
		}
	}})
	switch rep.Status {
	case eventlog.StatusTampered:
		return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("refusing to append to %s: %w", path, verr), "an append would extend a broken chain; keep the log as evidence and start a new capture")
	case eventlog.StatusIncomplete:
		if rep.Lines == 0 || !appendable(rep) {
			return nil, exitcode.New(exitcode.Incomplete, fmt.Errorf("refusing to append to %s: %w", path, verr), "its last line was cut off; appending would hide where")
		}
	}
	if verr != nil && rep.Status != eventlog.StatusIncomplete && rep.Status != eventlog.StatusUnsigned {
		return nil, exitcode.New(exitcode.Failure, verr, "")
	}
	if len(o.Signers) > 0 && !o.KeepOpen && !o.AllowUnsigned && !vouched(rep) {
		why := "it has no session_end"
		if rep.Ended {
			why = "its session_end has no signature by a key the keyring holds"
		}
		return nil, exitcode.New(exitcode.Tampered,
			fmt.Errorf("refusing to sign over %s: %s, so signing the new end would vouch for lines no trusted key sealed", path, why),
			"append with --allow-unsigned to vouch for them with your key, or without a keyring (the new end is then unsigned)")
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("seek %s: %w", path, err), "")
	}
	ar := &AppendReport{Reopened: rep.Ended}
	w := eventlog.ResumeWriter(f, rep.Session, rep.Lines-1, rep.Head)
	rec := NewRecorder(w, RecorderOptions{Source: eventlog.SourceReported, Clock: o.Clock, Redactor: o.Redactor})
	if id := rep.Last[eventlog.KindModelInput]; id != "" {
		rec.lastInput = id
	}
	refs := map[string]string{}        // ref -> id
	openCalls := map[string][]string{} // tool -> open call ids appended now, earliest first
	lastCall := map[string]string{}    // tool -> latest call id appended now
	resolve := func(field, target string, want eventlog.Kind) (string, error) {
		if target == "" {
			return "", nil
		}
		id := target
		if r, ok := refs[target]; ok {
			id = r
		}
		k, ok := kindOf[id]
		if !ok {
			return "", fieldErr(field, fmt.Errorf("%q is neither a ref of an earlier input line nor the id of an event in the log", target))
		}
		if want != "" && k != want {
			return "", fieldErr(field, fmt.Errorf("%q is not a %s", target, want))
		}
		return id, nil
	}
	var inErr error
	br := bufio.NewReaderSize(in, 64<<10)
	lineNo := int64(0)
	for {
		raw, rerr := readInputLine(br)
		if rerr == io.EOF {
			break
		}
		lineNo++
		if rerr != nil {
			inErr = atLine(o.InputName, lineNo, rerr)
			break
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := jsonlimit.CheckIn(raw, o.InputName, lineNo); err != nil {
			inErr = err
			break
		}
		id, kind, ref, err := appendOne(rec, raw, resolve, refs, openCalls, lastCall)
		if err != nil {
			inErr = atLine(o.InputName, lineNo, err)
			break
		}
		kindOf[id] = kind
		if kind != eventlog.KindToolCall && kind != eventlog.KindModelInput && kind != eventlog.KindModelOutput {
			kindOf[id] = ""
		}
		res := AppendResult{Line: lineNo, ID: id, Kind: kind, Ref: ref}
		ar.Appended = append(ar.Appended, res)
		if o.OnEvent != nil {
			o.OnEvent(res)
		}
	}
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
		if len(out)+len(chunk) > MaxImportLine+1 {
			return nil, fmt.Errorf("line longer than %d bytes", MaxImportLine)
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

func appendOne(rec *Recorder, raw []byte, resolve func(string, string, eventlog.Kind) (string, error),
	refs map[string]string, openCalls map[string][]string, lastCall map[string]string) (string, eventlog.Kind, string, error) {
	in, err := ParseAppendInput(raw)
	if err != nil {
		return "", "", "", err
	}
	if in.Ref != "" {
		if _, dup := refs[in.Ref]; dup {
			return "", "", "", fmt.Errorf("field \"ref\": %q was used by an earlier line", in.Ref)
		}
	}
	var id string
	switch in.Kind {
	case eventlog.KindModelInput:
		id, err = rec.ModelInput(ModelInputEvent{Role: in.Role, Content: in.Content, TS: in.TS})
	case eventlog.KindModelOutput:
		input, rerr := resolve("input", in.Input, eventlog.KindModelInput)
		if rerr != nil {
			return "", "", "", rerr
		}
		id, err = rec.ModelOutput(ModelOutputEvent{Role: in.Role, Content: in.Content, Input: input, TS: in.TS})
	case eventlog.KindToolCall:
		cause, rerr := resolve("cause", in.Cause, eventlog.KindModelOutput)
		if rerr != nil {
			return "", "", "", rerr
		}
		var args any
		if len(in.Arguments) > 0 {
			args = in.Arguments
		}
		id, err = rec.ToolCall(ToolCallEvent{Tool: in.Tool, Arguments: args, Cause: cause, TS: in.TS})
		if err == nil {
			openCalls[in.Tool] = append(openCalls[in.Tool], id)
			lastCall[in.Tool] = id
		}
	case eventlog.KindToolResponse:
		call, rerr := resolve("call", in.Call, eventlog.KindToolCall)
		if rerr != nil {
			return "", "", "", rerr
		}
		if call == "" {
			if q := openCalls[in.Tool]; len(q) > 0 {
				call = q[0]
			} else {
				return "", "", "", fmt.Errorf("field \"call\": missing, and no call of tool %q appended before it is open", in.Tool)
			}
		}
		q := openCalls[in.Tool]
		for i, c := range q {
			if c == call {
				openCalls[in.Tool] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		var result any
		if len(in.Result) > 0 {
			result = in.Result
		}
		id, err = rec.ToolResponse(ToolResponseEvent{Tool: in.Tool, Call: call, Result: result, IsError: in.IsError, TS: in.TS})
	case eventlog.KindExternalEffect:
		call, rerr := resolve("call", in.Call, eventlog.KindToolCall)
		if rerr != nil {
			return "", "", "", rerr
		}
		if call == "" && in.Tool != "" {
			call = lastCall[in.Tool]
		}
		var detail any
		if len(in.Detail) > 0 {
			detail = in.Detail
		}
		id, err = rec.ExternalEffect(ExternalEffectEvent{Tool: in.Tool, Call: call, Effect: *in.Effect, Detail: detail, TS: in.TS})
	case eventlog.KindMessage:
		cause, rerr := resolve("cause", in.Cause, "")
		if rerr != nil {
			return "", "", "", rerr
		}
		id, err = rec.Message(MessageEvent{Message: *in.Message, Cause: cause, TS: in.TS})
	}
	if err != nil {
		return "", "", "", err
	}
	if in.Ref != "" {
		refs[in.Ref] = id
	}
	return id, in.Kind, in.Ref, nil
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
