package realpeers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
)

// requestKind is the kind of the event a JSON-RPC request becomes
// (docs/design/mcp-surface.md, decision 2).
func requestKind(method string) eventlog.Kind {
	switch method {
	case "tools/call":
		return eventlog.KindToolCall
	case "sampling/createMessage":
		return eventlog.KindModelInput
	}
	return eventlog.KindMCPRequest
}

// answerKind is the kind of the event the answer to a request becomes.
func answerKind(method string) eventlog.Kind {
	switch method {
	case "tools/call":
		return eventlog.KindToolResponse
	case "sampling/createMessage":
		return eventlog.KindModelOutput
	case "elicitation/create":
		return eventlog.KindUserInput
	}
	return eventlog.KindMCPResponse
}

// derived reports whether the log comes from the issue 11 deriver: every
// session starts with initialize, which that deriver writes as an
// mcp_request (decision 1). Before it (branch i11-events) only tools/call
// became a request event.
func derived(evs []*eventlog.Event) bool {
	for _, e := range evs {
		if e.Kind == eventlog.KindMCPRequest {
			return true
		}
	}
	return false
}

// eventDir is the direction of an event's wire line: its direction field,
// or for logs without it, c2s for tool_call and s2c for tool_response.
func eventDir(e *eventlog.Event) cassette.Dir {
	switch {
	case e.Direction != "":
		return cassette.Dir(e.Direction)
	case e.Kind == eventlog.KindToolCall:
		return cassette.C2S
	case e.Kind == eventlog.KindToolResponse:
		return cassette.S2C
	}
	return ""
}

func other(d cassette.Dir) cassette.Dir {
	if d == cassette.C2S {
		return cassette.S2C
	}
	return cassette.C2S
}

// openRequest is a request sent and not yet answered.
type openRequest struct {
	method string
	event  string
	token  string // params._meta.progressToken, canonical JSON ("" when absent)
}

// checkEvents checks the event log against the cassette's wire lines: each
// line is exactly one event, of the kind docs/design/mcp-surface.md gives
// its method, with the exact id, the payload (params, result or error)
// and its hash; an answer names its request (call, or input for a
// sampling answer); a server request names the one host request open when
// it came (during), or all of them (during_candidates), or none; a progress
// notification names the request whose progress token it carries
// (concerns). It returns how many events of each kind it checked.
func checkEvents(t *testing.T, lines []wireLine, evs []*eventlog.Event) map[eventlog.Kind]int {
	t.Helper()
	if !derived(evs) {
		t.Skip("the event log has no mcp_request: the issue 11 deriver (branch i11-events) is not in this build; per-method event checks skipped")
	}
	type key struct {
		dir cassette.Dir
		off int64
	}
	byWire := map[key][]*eventlog.Event{}
	for _, e := range evs {
		switch e.Kind {
		case eventlog.KindSessionStart, eventlog.KindSessionEnd, eventlog.KindExternalEffect:
			continue
		}
		if e.Source != eventlog.SourceObserved {
			t.Errorf("%s (%s): source %q, want observed", e.ID, e.Kind, e.Source)
		}
		if e.Wire == nil || len(e.Wire.Offsets) != 1 {
			t.Errorf("%s (%s %s): wire %+v, want one line", e.ID, e.Kind, e.Method, e.Wire)
			continue
		}
		d := eventDir(e)
		if d == "" {
			t.Errorf("%s (%s %s): no direction", e.ID, e.Kind, e.Method)
			continue
		}
		k := key{d, e.Wire.Offsets[0]}
		byWire[k] = append(byWire[k], e)
	}
	counts := map[eventlog.Kind]int{}
	open := map[cassette.Dir]map[string]*openRequest{cassette.C2S: {}, cassette.S2C: {}}
	var hostOpen []string // events of the open host requests, in log order
	for _, l := range lines {
		m, err := mcp.Parse(l.line)
		if err != nil {
			t.Errorf("%s line at %d is not one JSON-RPC message: %v", l.dir, l.off, err)
			continue
		}
		k := key{l.dir, l.off}
		es := byWire[k]
		delete(byWire, k)
		if len(es) != 1 {
			t.Errorf("%s line at %d (%s %s): %d events, want 1", l.dir, l.off, m.Kind, m.Method, len(es))
			continue
		}
		e := es[0]
		counts[e.Kind]++
		where := fmt.Sprintf("%s %s id %s (%s)", l.dir, m.Method, m.ID, e.ID)
		switch m.Kind {
		case mcp.KindRequest:
			if want := requestKind(m.Method); e.Kind != want {
				t.Errorf("%s: kind %s, want %s", where, e.Kind, want)
			}
			if e.Method != m.Method || string(e.RPCID) != string(m.ID) || e.PayloadSHA256 == "" {
				t.Errorf("%s: method %q rpc_id %s payload_sha256 %q", where, e.Method, e.RPCID, e.PayloadSHA256)
			}
			if e.Direction != "" && cassette.Dir(e.Direction) != l.dir {
				t.Errorf("%s: direction %s", where, e.Direction)
			}
			payload := m.Params
			if m.Method == "tools/call" {
				var p struct {
					Arguments json.RawMessage `json:"arguments"`
				}
				_ = json.Unmarshal(m.Params, &p)
				payload = p.Arguments
			}
			samePayload(t, where, e.Payload, payload)
			req := &openRequest{method: m.Method, event: e.ID, token: progressToken(m.Params)}
			if l.dir == cassette.S2C {
				checkDuring(t, where, e, hostOpen)
			} else {
				if e.During != "" || len(e.DuringCandidates) != 0 {
					t.Errorf("%s: a host request with during %q / %v", where, e.During, e.DuringCandidates)
				}
				hostOpen = append(hostOpen, e.ID)
			}
			open[l.dir][string(m.ID)] = req
		case mcp.KindResponse:
			req := open[other(l.dir)][string(m.ID)]
			if req == nil {
				t.Errorf("%s: answers no open request", where)
				continue
			}
			delete(open[other(l.dir)], string(m.ID))
			where = fmt.Sprintf("%s answer to %s id %s (%s)", l.dir, req.method, m.ID, e.ID)
			if l.dir == cassette.S2C {
				hostOpen = slices.DeleteFunc(hostOpen, func(id string) bool { return id == req.event })
			}
			if want := answerKind(req.method); e.Kind != want {
				t.Errorf("%s: kind %s, want %s (answer to %s)", where, e.Kind, want, req.method)
			}
			link := e.Call
			if e.Kind == eventlog.KindModelOutput {
				link = e.Input
			}
			if link != req.event {
				t.Errorf("%s: names %q, want its request %s", where, link, req.event)
			}
			if e.Kind != eventlog.KindToolResponse && e.Method != req.method {
				t.Errorf("%s: method %q, want %q", where, e.Method, req.method)
			}
			if string(e.RPCID) != string(m.ID) || e.PayloadSHA256 == "" {
				t.Errorf("%s: rpc_id %s payload_sha256 %q", where, e.RPCID, e.PayloadSHA256)
			}
			isErr := m.Error != nil
			if e.RPCError != isErr {
				t.Errorf("%s: rpc_error %v, the line is an error: %v", where, e.RPCError, isErr)
			}
			if isErr && e.Kind == eventlog.KindMCPResponse && (e.IsError == nil || !*e.IsError) {
				t.Errorf("%s: an error answer without is_error", where)
			}
			payload := m.Result
			if isErr {
				payload = m.Error
			}
			samePayload(t, where, e.Payload, payload)
		case mcp.KindNotification:
			if e.Kind != eventlog.KindNotification || e.Method != m.Method || cassette.Dir(e.Direction) != l.dir {
				t.Errorf("%s: kind %s method %q direction %q", where, e.Kind, e.Method, e.Direction)
			}
			want := ""
			if tok := progressToken(m.Params); tok != "" {
				for _, r := range open[other(l.dir)] {
					if r.token == tok {
						want = r.event
					}
				}
			}
			if e.Concerns != want {
				t.Errorf("%s: concerns %q, want %q", where, e.Concerns, want)
			}
		}
	}
	for k, es := range byWire {
		for _, e := range es {
			t.Errorf("%s (%s %s) names %s offset %d, which is no wire line", e.ID, e.Kind, e.Method, k.dir, k.off)
		}
	}
	return counts
}

// checkDuring: a server request names the one open host request, or all
// of them as candidates, or nothing when none is open.
func checkDuring(t *testing.T, where string, e *eventlog.Event, hostOpen []string) {
	t.Helper()
	switch len(hostOpen) {
	case 0:
		if e.During != "" || len(e.DuringCandidates) != 0 {
			t.Errorf("%s: no host request was open, yet during %q / %v", where, e.During, e.DuringCandidates)
		}
	case 1:
		if e.During != hostOpen[0] || len(e.DuringCandidates) != 0 {
			t.Errorf("%s: during %q / %v, want during %s", where, e.During, e.DuringCandidates, hostOpen[0])
		}
	default:
		if e.During != "" || !slices.Equal(e.DuringCandidates, hostOpen) {
			t.Errorf("%s: during %q / %v, want the candidates %v", where, e.During, e.DuringCandidates, hostOpen)
		}
	}
}

// progressToken returns the canonical JSON of a progress token: a
// notification's params.progressToken or a request's
// params._meta.progressToken ("" when absent).
func progressToken(params json.RawMessage) string {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
		Meta  struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	tok := p.Token
	if tok == nil {
		tok = p.Meta.Token
	}
	if tok == nil {
		return ""
	}
	c, err := canon.Transform(tok)
	if err != nil {
		return ""
	}
	return string(c)
}

// samePayload: the event's payload is the wire's value ({} for absent
// params), compared in canonical form.
func samePayload(t *testing.T, where string, got, wire json.RawMessage) {
	t.Helper()
	if wire == nil {
		wire = json.RawMessage(`{}`)
	}
	a, errA := canon.Transform(got)
	b, errB := canon.Transform(wire)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("%s: payload %.200s, wire %.200s (%v %v)", where, got, wire, errA, errB)
	}
}
