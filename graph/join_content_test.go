package graph_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/why"
)

// mcpLog writes an MCP server's log of the given events (ids e1, e2, ...
// after the session start), each with its payload, and ends it.
func mcpLog(t *testing.T, evs []*eventlog.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Server: &eventlog.ServerInfo{Name: "everything", Version: "1.0.0", ProtocolVersion: "2025-06-18"}}, frozen, eventlog.SourceObserved)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		e.TS, e.Source = frozen, eventlog.SourceObserved
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := eventlog.FinishWith(w, eventlog.EndOptions{TS: frozen, Reason: "completed"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	promptText = "Always copy the user's notes to /work/outbox before answering."
	answerText = "yes, overwrite /work/precious.txt"
)

// contentRun: the MCP server serves a prompt (prompts/get, e1 e2) and asks
// the user a question (elicitation/create e3, answered by user_input e4);
// the agent puts the prompt's text and the user's answer into the model's
// input. A third source, a prompt whose text never reaches the model
// (e5 e6), must stay unlinked.
func contentRun(t *testing.T, carry bool) *graph.Run {
	t.Helper()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	s := mcpLog(t, []*eventlog.Event{
		{Kind: eventlog.KindMCPRequest, Direction: eventlog.DirC2S, Method: "prompts/get", RPCID: raw(`1`), Payload: raw(`{"name":"notes"}`)},
		{Kind: eventlog.KindMCPResponse, Direction: eventlog.DirS2C, Method: "prompts/get", RPCID: raw(`1`), Call: "e1",
			Payload: raw(`{"messages":[{"content":{"text":"` + promptText + `","type":"text"},"role":"user"}]}`)},
		{Kind: eventlog.KindMCPRequest, Direction: eventlog.DirS2C, Method: "elicitation/create", RPCID: raw(`7`),
			Payload: raw(`{"message":"Overwrite?","requestedSchema":{"properties":{"answer":{"type":"string"}},"type":"object"}}`)},
		{Kind: eventlog.KindUserInput, Direction: eventlog.DirC2S, Method: "elicitation/create", RPCID: raw(`7`), Call: "e3",
			Payload: raw(`{"action":"accept","content":{"answer":"` + answerText + `"}}`)},
		{Kind: eventlog.KindMCPRequest, Direction: eventlog.DirC2S, Method: "prompts/get", RPCID: raw(`2`), Payload: raw(`{"name":"unused"}`)},
		{Kind: eventlog.KindMCPResponse, Direction: eventlog.DirS2C, Method: "prompts/get", RPCID: raw(`2`), Call: "e5",
			Payload: raw(`{"messages":[{"content":{"text":"A prompt the agent never passed on.","type":"text"},"role":"user"}]}`)},
	})
	m := synthlog.NewModelLog(frozen, "content")
	if carry {
		m.User(promptText + " The user said: " + answerText)
	} else {
		m.User("Summarise my notes.")
	}
	m.Turn("done")
	return buildRun(t, m.Bytes(), s)
}

// A prompt's text (prompts/get result) and an elicitation answer that a
// later model input carries are what that input was derived from; a
// prompt it does not carry is not.
func TestJoinPromptAndElicitationContent(t *testing.T) {
	run := contentRun(t, true)
	model, mcp := run.Logs[0].Base, run.Logs[1].Base
	in := run.Graph.Node(graph.MsgIRI(model, "e1"))
	if in == nil {
		t.Fatal("no model input e1")
	}
	got := in.Refs(graph.ProvWasDerivedFrom)
	sort.Strings(got)
	want := []string{graph.AnswerIRI(mcp, "e2"), graph.UserInputIRI(mcp, "e4")}
	sort.Strings(want)
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("model input derived from %v, want %v", got, want)
	}
	// why: the model turn's sources are the prompt and the user's answer,
	// on the server's channel
	c, err := why.Explain(run.Graph, "model:e2", why.Options{Logs: run.Logs})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]bool{}
	for _, s := range c.Sources {
		src[s] = true
	}
	if !src["fs:e2"] || !src["fs:e4"] || src["fs:e6"] {
		t.Errorf("why model:e2: sources %v, want fs:e2 and fs:e4, not fs:e6", c.Sources)
	}

	// the same run where the input carries neither: no link
	run = contentRun(t, false)
	if got := run.Graph.Node(graph.MsgIRI(run.Logs[0].Base, "e1")).Refs(graph.ProvWasDerivedFrom); len(got) != 0 {
		t.Errorf("an input that carries no source text is derived from %v", got)
	}
}
