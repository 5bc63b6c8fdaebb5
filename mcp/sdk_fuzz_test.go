package mcp

import (
	"bytes"
	stdjson "encoding/json"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// sdkReading is what a Go SDK server acts on for one line: the SDK's own
// jsonrpc.DecodeMessage, then (for tools/call) its params decoder: segmentio
// JSON with case-insensitive field matching off, as its internal/json does.
type sdkReading struct {
	request bool
	method  string
	id      any // int64, string or nil
	tool    string
	args    []byte
	hasArgs bool
}

func readAsSDK(line []byte) (*sdkReading, bool) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return &sdkReading{}, true
	}
	r := &sdkReading{request: true, method: req.Method, id: req.ID.Raw()}
	if req.Method == "tools/call" {
		var p sdkmcp.CallToolParamsRaw
		dec := segjson.NewDecoder(bytes.NewReader(req.Params))
		dec.DontMatchCaseInsensitiveStructFields()
		if len(req.Params) > 0 {
			if err := dec.Decode(&p); err != nil {
				return nil, false // the server answers invalid params: nothing runs
			}
		}
		r.tool, r.args, r.hasArgs = p.Name, p.Arguments, p.Arguments != nil
	}
	return r, true
}

// sameID compares the SDK's id (int64 or string) with an exact id token.
func sameID(sdk any, tok []byte) bool {
	switch v := sdk.(type) {
	case nil:
		return len(tok) == 0 || string(tok) == "null"
	case int64:
		n, err := strconv.ParseInt(string(tok), 10, 64)
		return err == nil && n == v
	case string:
		var s string
		return stdjson.Unmarshal(tok, &s) == nil && s == v
	}
	return false
}

func sameArgs(a, b []byte) bool {
	ca, err1 := canon.Transform(a)
	cb, err2 := canon.Transform(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return bytes.Equal(ca, cb)
}

// FuzzSDKDifferential compares the witness's reading of a line with the Go
// MCP SDK's. Whenever the witness calls a line unambiguous, the SDK reads
// the same method, id, tool name and arguments (or refuses the line: then
// nothing runs). Whenever the SDK reads a request the witness does not read
// as one, the witness has flagged the line (Parse returns an error, which
// the deriver records as an ambiguous event) and one of its candidate
// readings names the SDK's method and tool.
func FuzzSDKDifferential(f *testing.F) {
	for _, s := range attackLines {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greet","arguments":{"who":"x","n":[1,2.5]}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"greet"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"id":1,"method":"tools/call","params":{"name":"delete_file"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_META":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Parse(line)
		sdk, ok := readAsSDK(line)
		if err == nil {
			if !ok {
				return // the SDK refuses what the witness reads: the server does nothing
			}
			if sdk.request != (m.Kind == KindRequest || m.Kind == KindNotification) {
				t.Fatalf("witness reads a %s, the SDK request=%v", m.Kind, sdk.request)
			}
			if !sdk.request {
				return
			}
			if sdk.method != m.Method || !sameID(sdk.id, m.ID) {
				t.Fatalf("witness %s id %s, SDK %s id %v", m.Method, m.ID, sdk.method, sdk.id)
			}
			if m.Method == "tools/call" {
				nameRaw, _ := Member(m.Params, "name")
				tool, _ := StringValue(nameRaw)
				args, hasArgs := Member(m.Params, "arguments")
				if string(args) == "null" {
					hasArgs = false
				}
				if tool != sdk.tool || hasArgs != sdk.hasArgs || (hasArgs && !sameArgs(args, sdk.args)) {
					t.Fatalf("witness tool %q args %s, SDK tool %q args %s", tool, args, sdk.tool, sdk.args)
				}
			}
			return
		}
		if !ok || !sdk.request {
			return
		}
		// the SDK acts on a line the witness flagged: a reading must name it
		rd := ReadAll(line)
		for _, r := range rd.List {
			if r.Method == sdk.method && (sdk.method != "tools/call" || r.Tool == sdk.tool) {
				return
			}
		}
		t.Fatalf("the SDK reads %s %q from a flagged line, no witness reading does: %v", sdk.method, sdk.tool, err)
	})
}
