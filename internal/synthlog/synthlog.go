// Package synthlog is the one generator of synthetic witness event logs for
// tests and benchmarks (graph, verify, replay, cmd/witness-bench). It has two
// shapes. Generate writes a log of exactly n events: a session header with a
// server and tool definitions, then model turns that ask for tool calls,
// their responses and external effects, notifications, and a session end;
// the same (n, seed) always gives the same bytes. NewGraph and WriteGraph
// give a log sized by the graph it maps to, with the shared descendants
// replay's benchmarks need. Both write through eventlog.Writer, the format
// package, and nothing else of the witness.
package synthlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/mcp"
)

// Tools are the tool names the generated server lists.
var tools = []string{"read_file", "write_file", "list_dir", "delete_file", "search", "get_weather", "send_email", "run_query"}

var words = []string{"alpha", "beta", "gamma", "délta", "ε", "zeta", "naïve", "日本語", "emoji 🙂", "quote \"q\"", "tab\tsep", "line\nbreak", "back\\slash", "ümlaut", "data"}

// Generate writes a log of exactly n events (n >= 2: header and end
// included) for session to w.
func Generate(w io.Writer, n int, seed uint64, session string) error {
	return GenerateWith(w, n, seed, Options{Session: session})
}

// Options are the choices of GenerateWith.
type Options struct {
	// Session is the session id; empty derives it from the header and the
	// start time as a capture does (eventlog.SessionID), so that verify
	// reads the log as a valid capture.
	Session string
	// Signers sign the session end, as a capture's keyring does.
	Signers []eventlog.Signer
}

// GenerateWith is Generate with a derived session id and a signed end when
// o asks: a log verify judges whole (the benchmarks' valid capture).
func GenerateWith(w io.Writer, n int, seed uint64, o Options) error {
	if n < 2 {
		return fmt.Errorf("synthlog: need at least 2 events, got %d", n)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t0 := time.Date(2026, 8, 30, 14, 33, 0, 0, time.UTC)
	clock := 0
	ts := func() string {
		clock += 1 + r.IntN(250)
		return t0.Add(time.Duration(clock) * time.Millisecond).Format(time.RFC3339Nano)
	}
	defs := make([]eventlog.ToolDef, len(tools))
	for i, t := range tools {
		defs[i] = eventlog.ToolDef{Name: t, SHA256: fmt.Sprintf("%064x", i+1)}
	}
	defs[0].Annotations = json.RawMessage(`{"readOnlyHint":true}`)
	defs[3].Annotations = json.RawMessage(`{"destructiveHint":true}`)
	h := &eventlog.Header{
		Format: "witness-events", WitnessVersion: "synthetic", Pairing: "jsonrpc-id",
		Seal:   &eventlog.SealRef{Digest: fmt.Sprintf("%064x", seed+7), WitnessID: "synthetic-agent"},
		Server: &eventlog.ServerInfo{Name: "synthetic-server", Version: "1.0.0", ProtocolVersion: "2025-06-18", Command: "node", Args: []string{"dist/index.js"}, ToolsSHA256: fmt.Sprintf("%064x", 99), Tools: defs},
	}
	startTS := ts()
	session := o.Session
	if session == "" {
		var err error
		if session, err = eventlog.SessionID(h, startTS); err != nil {
			return fmt.Errorf("synthlog: %w", err)
		}
	}
	cw := eventlog.NewWriter(bw, session)
	if err := cw.Append(&eventlog.Event{Kind: eventlog.KindSessionStart, TS: startTS, Source: eventlog.SourceObserved, Header: h}); err != nil {
		return err
	}
	text := func(k int) string {
		s := ""
		for i := 0; i < k; i++ {
			if i > 0 {
				s += " "
			}
			s += words[r.IntN(len(words))]
		}
		return s
	}
	jstr := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	rpc := 0
	lastInput, lastOutput := "", ""
	var open []string // open calls
	openTool := map[string]string{}
	for cw.Count() < int64(n-1) {
		left := int64(n-1) - cw.Count()
		var e *eventlog.Event
		switch x := r.IntN(100); {
		case len(open) > 0 && (x < 35 || left <= int64(len(open))):
			// answer an open call (not always the latest)
			i := r.IntN(len(open))
			call := open[i]
			open = append(open[:i], open[i+1:]...)
			isErr := r.IntN(10) == 0
			e = &eventlog.Event{Kind: eventlog.KindToolResponse, TS: ts(), Source: eventlog.SourceObserved, Tool: openTool[call], Method: mcp.MethodToolsCall, Call: call,
				IsError: &isErr, Payload: json.RawMessage(`{"content":[{"type":"text","text":` + string(jstr(text(4))) + `}]}`)}
			delete(openTool, call)
		case x < 50:
			e = &eventlog.Event{Kind: eventlog.KindModelInput, TS: ts(), Source: eventlog.SourceReported, Role: "user", Payload: jstr(text(6))}
		case x < 62 && lastInput != "":
			e = &eventlog.Event{Kind: eventlog.KindModelOutput, TS: ts(), Source: eventlog.SourceReported, Role: "assistant", Input: lastInput, Payload: jstr(text(5))}
		case x < 85 && lastOutput != "" && left > int64(len(open))+1:
			rpc++
			tool := tools[r.IntN(len(tools))]
			e = &eventlog.Event{Kind: eventlog.KindToolCall, TS: ts(), Source: eventlog.SourceObserved, Tool: tool, Method: mcp.MethodToolsCall, RPCID: json.RawMessage(strconv.Itoa(rpc)),
				Cause: lastOutput, Payload: json.RawMessage(`{"path":` + string(jstr("/data/"+strconv.Itoa(r.IntN(1000))+".txt")) + `}`)}
		case x < 95 && len(open) > 0:
			call := open[r.IntN(len(open))]
			e = &eventlog.Event{Kind: eventlog.KindExternalEffect, TS: ts(), Source: eventlog.SourceObserved, Tool: openTool[call], Call: call,
				Effect: &eventlog.Effect{Op: "write", Target: "/data/out-" + strconv.Itoa(r.IntN(100)), Reason: "reported"}}
		default:
			e = &eventlog.Event{Kind: eventlog.KindNotification, TS: ts(), Source: eventlog.SourceObserved, Method: mcp.NotificationMessage, Payload: json.RawMessage(`{"level":"info","data":` + string(jstr(text(3))) + `}`)}
		}
		if err := cw.Append(e); err != nil {
			return err
		}
		switch e.Kind {
		case eventlog.KindModelInput:
			lastInput = e.ID
		case eventlog.KindModelOutput:
			lastOutput = e.ID
		case eventlog.KindToolCall:
			open = append(open, e.ID)
			openTool[e.ID] = e.Tool
		}
	}
	if o.Session != "" && len(o.Signers) == 0 {
		// the shape every earlier caller has: an unsigned end
		if err := cw.Append(&eventlog.Event{Kind: eventlog.KindSessionEnd, TS: ts(), Source: eventlog.SourceObserved, End: &eventlog.End{Count: cw.Count(), Head: cw.Head(), Reason: "closed"}}); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := eventlog.FinishWith(cw, eventlog.EndOptions{TS: ts(), Reason: "closed", Signers: o.Signers}); err != nil {
		return err
	}
	return bw.Flush()
}
