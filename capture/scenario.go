package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// ScenarioCall is one tool call of a capture scenario.
type ScenarioCall struct {
	Index     int             // position in the scenario file
	Tool      string          // tool name
	Arguments json.RawMessage // compact JSON object, or nil for none
}

// ParseScenario reads a scenario: a JSON list whose elements are either
// 0.1.0's {"kind":"tool_call","tool":NAME,"payload":{args}} or the simpler
// {"tool":NAME,"arguments":{args}}. Elements of the other 0.1.0 kinds
// (tool_response, model_input, ...) are not wire actions: they are skipped
// and named in the returned notes. All elements are checked before anything
// runs; errors (exit code Usage) name the file, the element and the field.
func ParseScenario(data []byte, name string) ([]ScenarioCall, []string, error) {
	bad := func(format string, args ...any) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("scenario %s: "+format, append([]any{name}, args...)...),
			`a scenario is a JSON list of {"tool": NAME, "arguments": {...}} or {"kind": "tool_call", "tool": NAME, "payload": {...}}`)
	}
	// nesting deeper than the one limit is refused first, in one pass
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("scenario %w", err),
			`a scenario is a JSON list of {"tool": NAME, "arguments": {...}} or {"kind": "tool_call", "tool": NAME, "payload": {...}}`)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, nil, bad("line %d: not valid JSON: %v", line, err)
		}
		return nil, nil, bad("must be a JSON list: %v", err)
	}
	var calls []ScenarioCall
	var notes []string
	for i, raw := range elems {
		var el map[string]json.RawMessage
		if err := json.Unmarshal(raw, &el); err != nil || el == nil {
			return nil, nil, bad("[%d]: must be a JSON object", i)
		}
		for k := range el {
			switch k {
			case "kind", "tool", "payload", "arguments", "role":
			default:
				return nil, nil, bad("[%d]: unknown field %q", i, k)
			}
		}
		kind := "tool_call"
		if k, ok := el["kind"]; ok {
			if err := json.Unmarshal(k, &kind); err != nil {
				return nil, nil, bad("[%d].kind: must be a string", i)
			}
		}
		switch kind {
		case "tool_call":
		case "tool_response", "model_input", "model_output", "external_effect":
			notes = append(notes, fmt.Sprintf("scenario[%d]: kind %s is not a wire action; skipped (the real response and effects are observed; report model events with 'witness capture append')", i, kind))
			continue
		default:
			return nil, nil, bad("[%d].kind: must be one of tool_call, tool_response, model_input, model_output, external_effect, got %q", i, kind)
		}
		var tool string
		if err := json.Unmarshal(el["tool"], &tool); err != nil || tool == "" {
			return nil, nil, bad("[%d].tool: must be a non-empty string", i)
		}
		args, hasArgs := el["arguments"]
		if p, ok := el["payload"]; ok {
			if hasArgs {
				return nil, nil, bad("[%d]: give arguments or payload, not both", i)
			}
			args, hasArgs = p, true
		}
		call := ScenarioCall{Index: i, Tool: tool}
		if hasArgs && string(bytes.TrimSpace(args)) != "null" {
			if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' {
				return nil, nil, bad("[%d].arguments: must be a JSON object (the tool's arguments), got %s", i, preview(t))
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, args); err != nil {
				return nil, nil, bad("[%d].arguments: %v", i, err)
			}
			call.Arguments = buf.Bytes()
		}
		calls = append(calls, call)
	}
	return calls, notes, nil
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) ([]ScenarioCall, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("read scenario: %w", err), "")
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
	Records   int64 // cassette records
	EventN    int64 // event lines, session_end included
}

// RunCapture spawns the server, performs the handshake and tool listing,
// makes the scenario's calls in order and shuts the server down, writing
// the cassette and the event log to OutDir. Whatever happens, both files
// hold everything received; the error says what went wrong.
func RunCapture(o CaptureOptions) (*CaptureResult, error) {
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create capture folder: %w", err), "")
	}
	res := &CaptureResult{Dir: o.OutDir, Cassette: filepath.Join(o.OutDir, CassetteFile), Events: filepath.Join(o.OutDir, EventsFile)}
	cf, ef, err := CreateRecordingFiles(o.OutDir, o.Files)
	if err != nil {
		return nil, err
	}
	defer cf.Close()
	defer ef.Close()
	o.Cassette, o.Events = cf, ef
	l, err := OpenLive(o.LiveOptions)
	if l != nil {
		res.Records, res.EventN = l.Counts()
	}
	if err != nil {
		return res, err
	}
	res.Tools = len(l.Tools)
	var runErr error
	for _, c := range o.Calls {
		m, err := l.CallTool(c.Tool, c.Arguments)
		if err != nil {
			runErr = fmt.Errorf("scenario[%d] (tool %s): %w", c.Index, c.Tool, err)
			break
		}
		res.Calls++
		if m.Error != nil {
			res.ToolError++
		} else if b := isErrorOf(json.RawMessage(m.Result)); b != nil && *b {
			res.ToolError++
		}
	}
	cerr := l.Close()
	res.Server = l.Deriver().Server()
	res.Records, res.EventN = l.Counts()
	if runErr != nil {
		return res, runErr
	}
	if cerr != nil {
		return res, exitcode.WithHint(cerr, "the cassette and event log hold everything received")
	}
	if err := cf.Sync(); err != nil {
		return res, err
	}
	return res, ef.Sync()
}
