package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/mcp"
	"os"
	"path/filepath"
)

// ScenarioCall is one element of a capture scenario: a tool call (Tool
// set), another request of the host (Method set), or how the host answers
// the server's requests of a method (Answer set).
type ScenarioCall struct {
	Index     int             // position in the scenario file
	Tool      string          // tool name
	Arguments json.RawMessage // compact JSON object, or nil for none

	Method string          // a request other than tools/call (resources/read, prompts/get, ping, ...)
	Params json.RawMessage // its params: compact JSON object, or nil for none

	// Answer names a method the server may send (sampling/createMessage,
	// elicitation/create, roots/list, ...); Result or Error (a JSON-RPC
	// error object) is the host's answer.
	Answer string
	Result json.RawMessage
	Error  json.RawMessage
}

// ParseScenario reads a scenario: a JSON list whose elements are either
// 0.1.0's {"kind":"tool_call","tool":NAME,"payload":{args}} or the simpler
// {"tool":NAME,"arguments":{args}}, a request of another method
// {"method":M,"params":{...}}, or a scripted answer to the server's
// requests {"answer":M,"result":{...}} / {"answer":M,"error":{...}}
// (docs/formats/scenario.md). Elements of the other 0.1.0 kinds
// (tool_response, model_input, ...) are not wire actions: they are skipped
// and named in the returned notes. All elements are checked before anything
// runs; errors (exit code Usage) name the file, the element and the field.
func ParseScenario(data []byte, name string) ([]ScenarioCall, []string, error) {
	const hint = `a scenario is a JSON list of {"tool": NAME, "arguments": {...}}, {"method": M, "params": {...}} or {"answer": M, "result": {...}} (docs/formats/scenario.md)`
	bad := func(v *jsontree.Value, field, format string, args ...any) error {
		e := &jsontree.Error{File: name, Field: field, Msg: fmt.Sprintf(format, args...)}
		if v != nil {
			e.Line, e.Col = int64(v.Line), v.Col
		}
		return exitcode.New(exitcode.Usage, fmt.Errorf("scenario %w", e), hint)
	}
	// nesting deeper than the one limit is refused first, in one pass
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("scenario %w", err), hint)
	}
	if root.Kind != jsontree.Array {
		return nil, nil, bad(root, "", "must be a JSON list, got %s", root.Kind)
	}
	var calls []ScenarioCall
	var notes []string
	for i, el := range root.Arr {
		at := jsonpath.Index("$", i)
		if el.Kind != jsontree.Object {
			return nil, nil, bad(el, at, "must be a JSON object")
		}
		if el.Get("method") != nil || el.Get("answer") != nil {
			c, err := parseScenarioExchange(data, el, at, i, bad)
			if err != nil {
				return nil, nil, err
			}
			calls = append(calls, c)
			continue
		}
		for _, m := range el.Obj {
			switch m.Key {
			case "kind", "tool", "payload", "arguments", "role":
			default:
				return nil, nil, bad(&jsontree.Value{Line: m.KeyLine, Col: m.KeyCol}, at, "unknown field %q", m.Key)
			}
		}
		kind := "tool_call"
		if k := el.Get("kind"); k != nil {
			if k.Kind != jsontree.String {
				return nil, nil, bad(k, at+".kind", "must be a string")
			}
			kind = k.Str
		}
		switch kind {
		case "tool_call":
		case "tool_response", "model_input", "model_output", "external_effect":
			notes = append(notes, fmt.Sprintf("scenario[%d]: kind %s is not a wire action; skipped (the real response and effects are observed; report model events with 'witness capture append')", i, kind))
			continue
		default:
			return nil, nil, bad(el.Get("kind"), at+".kind", "must be one of tool_call, tool_response, model_input, model_output, external_effect, got %q", kind)
		}
		tool := el.Get("tool")
		if tool == nil || tool.Kind != jsontree.String || tool.Str == "" {
			if tool == nil {
				tool = el
			}
			return nil, nil, bad(tool, at+".tool", "must be a non-empty string")
		}
		args := el.Get("arguments")
		if p := el.Get("payload"); p != nil {
			if args != nil {
				return nil, nil, bad(p, at, "give arguments or payload, not both")
			}
			args = p
		}
		call := ScenarioCall{Index: i, Tool: tool.Str}
		if args != nil && args.Kind != jsontree.Null {
			text := data[args.Off:args.End]
			if args.Kind != jsontree.Object {
				return nil, nil, bad(args, at+".arguments", "must be a JSON object (the tool's arguments), got %s", preview(text))
			}
			// the arguments are sent as written, only compacted
			var buf bytes.Buffer
			if err := json.Compact(&buf, text); err != nil {
				return nil, nil, bad(args, at+".arguments", "%v", err)
			}
			call.Arguments = buf.Bytes()
		}
		calls = append(calls, call)
	}
	return calls, notes, nil
}

// parseScenarioExchange reads a {"method","params"} or
// {"answer","result"|"error"} element.
func parseScenarioExchange(data []byte, el *jsontree.Value, at string, i int, bad func(*jsontree.Value, string, string, ...any) error) (ScenarioCall, error) {
	c := ScenarioCall{Index: i}
	field := "method"
	allowed := map[string]bool{"method": true, "params": true}
	if el.Get("answer") != nil {
		field = "answer"
		allowed = map[string]bool{"answer": true, "result": true, "error": true}
	}
	for _, m := range el.Obj {
		if !allowed[m.Key] {
			return c, bad(&jsontree.Value{Line: m.KeyLine, Col: m.KeyCol}, at, "unknown field %q in a %s element", m.Key, field)
		}
	}
	v := el.Get(field)
	if v.Kind != jsontree.String || v.Str == "" {
		return c, bad(v, at+"."+field, "must be a non-empty string (a JSON-RPC method)")
	}
	compact := func(f string) (json.RawMessage, error) {
		x := el.Get(f)
		if x == nil || x.Kind == jsontree.Null && f == "params" {
			return nil, nil
		}
		text := data[x.Off:x.End]
		if x.Kind != jsontree.Object {
			return nil, bad(x, at+"."+f, "must be a JSON object, got %s", preview(text))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, text); err != nil {
			return nil, bad(x, at+"."+f, "%v", err)
		}
		return buf.Bytes(), nil
	}
	var err error
	if field == "method" {
		switch v.Str {
		case mcp.MethodToolsCall:
			return c, bad(v, at+".method", `tools/call is written {"tool": NAME, "arguments": {...}}`)
		case mcp.MethodInitialize:
			return c, bad(v, at+".method", "the handshake is made by capture itself")
		}
		c.Method = v.Str
		c.Params, err = compact("params")
		return c, err
	}
	c.Answer = v.Str
	if (el.Get("result") == nil) == (el.Get("error") == nil) {
		return c, bad(el, at, "give exactly one of result or error")
	}
	if c.Result, err = compact("result"); err != nil {
		return c, err
	}
	c.Error, err = compact("error")
	return c, err
}

// scenarioAnswers returns a function answering the server's requests
// from the answer elements of calls: the answers to one method are used
// in order, the last one for every later request; ok is false for a
// method the scenario does not answer. It is not safe for concurrent use
// (the client's reader calls it from one goroutine).
func scenarioAnswers(calls []ScenarioCall) AnswerFunc {
	byMethod := map[string][]ScenarioCall{}
	for _, c := range calls {
		if c.Answer != "" {
			byMethod[c.Answer] = append(byMethod[c.Answer], c)
		}
	}
	if len(byMethod) == 0 {
		return nil
	}
	return func(method string, _ json.RawMessage) (result, errObj json.RawMessage, ok bool) {
		q := byMethod[method]
		if len(q) == 0 {
			return nil, nil, false
		}
		a := q[0]
		if len(q) > 1 {
			byMethod[method] = q[1:]
		}
		return a.Result, a.Error, true
	}
}

// scenarioCapabilities returns the client capabilities the scenario's
// answers declare in initialize: sampling for sampling/createMessage,
// elicitation (form and URL modes) for elicitation/create, roots for
// roots/list; nil when it answers none of them (capture then declares
// none, as before).
func scenarioCapabilities(calls []ScenarioCall) json.RawMessage {
	caps := map[string]json.RawMessage{}
	for _, c := range calls {
		switch c.Answer {
		case mcp.MethodSamplingCreateMessage:
			caps["sampling"] = json.RawMessage(`{}`)
		case mcp.MethodElicitationCreate:
			caps["elicitation"] = json.RawMessage(`{"form":{},"url":{}}`)
		case mcp.MethodRootsList:
			caps["roots"] = json.RawMessage(`{}`)
		}
	}
	if len(caps) == 0 {
		return nil
	}
	b, _ := json.Marshal(caps)
	return b
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) ([]ScenarioCall, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, exitcode.Input("read scenario", err, "check the path given to --scenario")
	}
	return ParseScenario(data, path)
}

// CaptureOptions configure a scripted capture (witness capture).
type CaptureOptions struct {
	LiveOptions        // Cassette and Events are set by RunCapture
	OutDir      string // folder for cassette.jsonl and events.jsonl
	// Files are the evidence rules for the two files (--force, the
	// command's inputs); see CreateRecordingFiles.
	Files atomicfile.Options
	Calls []ScenarioCall
}

// CaptureResult summarises a capture.
type CaptureResult struct {
	Dir       string
	Cassette  string // path of the cassette
	Events    string // path of the event log
	Server    eventlog.ServerInfo
	Tools     int   // tool definitions listed
	Calls     int   // tool calls answered
	ToolError int   // answered with isError or a JSON-RPC error
	Requests  int   // other requests answered (resources/read, prompts/get, ...)
	ReqError  int   // of those, answered with a JSON-RPC error
	Records   int64 // cassette records
	EventN    int64 // event lines, session_end included
}

// RunCapture spawns the server, performs the handshake and tool listing,
// makes the scenario's calls in order and shuts the server down, writing
// the cassette and the event log to OutDir. Whatever happens, both files
// hold everything received; the error says what went wrong.
func RunCapture(o CaptureOptions) (*CaptureResult, error) {
	if err := StdioSupported(); err != nil && o.URL == "" {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create capture folder: %w", err), "")
	}
	res := &CaptureResult{Dir: o.OutDir, Cassette: filepath.Join(o.OutDir, derive.CassetteFile), Events: filepath.Join(o.OutDir, derive.EventsFile)}
	if o.URL != "" {
		hf, err := derive.CreateHTTPCassetteFile(o.OutDir, o.Files)
		if err != nil {
			return nil, err
		}
		defer hf.Close()
		defer atomicfile.SyncLive(hf)
		o.HTTPCassette = hf
	}
	cf, ef, err := derive.CreateRecordingFiles(o.OutDir, o.Files)
	if err != nil {
		return nil, err
	}
	defer cf.Close()
	defer ef.Close()
	o.Cassette, o.Events = cf, ef
	if o.Answer == nil {
		o.Answer = scenarioAnswers(o.Calls)
	}
	if o.Capabilities == nil {
		o.Capabilities = scenarioCapabilities(o.Calls)
	}
	l, err := openLive(o.LiveOptions)
	if l != nil {
		res.Records, res.EventN = l.counts()
	}
	if err != nil {
		return res, err
	}
	res.Tools = len(l.Tools)
	var runErr error
	for _, c := range o.Calls {
		if c.Answer != "" {
			continue
		}
		if c.Method != "" {
			m, err := l.Request(c.Method, c.Params)
			if err != nil {
				runErr = fmt.Errorf("scenario[%d] (%s): %w", c.Index, c.Method, err)
				break
			}
			res.Requests++
			if m.Error != nil {
				res.ReqError++
			}
			continue
		}
		m, err := l.CallTool(c.Tool, c.Arguments)
		if err != nil {
			runErr = fmt.Errorf("scenario[%d] (tool %s): %w", c.Index, c.Tool, err)
			break
		}
		res.Calls++
		if m.Error != nil {
			res.ToolError++
		} else if resultIsError(m.Result) {
			res.ToolError++
		}
	}
	cerr := l.Close()
	res.Server = l.deriver().Server()
	res.Records, res.EventN = l.counts()
	if runErr != nil {
		return res, runErr
	}
	if cerr != nil {
		return res, exitcode.WithHint(cerr, "the cassette and event log hold everything received")
	}
	if err := atomicfile.SyncLive(cf); err != nil {
		return res, err
	}
	return res, atomicfile.SyncLive(ef)
}

// resultIsError says whether a tools/call result is an object whose
// isError is true.
func resultIsError(result json.RawMessage) bool {
	var obj struct {
		IsError *bool `json:"isError"`
	}
	return json.Unmarshal(result, &obj) == nil && obj.IsError != nil && *obj.IsError
}
