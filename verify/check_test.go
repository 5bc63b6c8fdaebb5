package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/testkeys"
)

const testTS = "2026-08-30T14:33:00+00:00"

// testKey is an eventlog.Signer and eventlog.SignatureVerifier for tests.
var testKey = testkeys.HMAC{ID: "k1", Key: bytes.Repeat([]byte{7}, 32), Unknown: eventlog.ErrUnknownKey}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

const testPrompt = "You are a careful file assistant."

func testPlan() Plan {
	return Plan{
		Ref:                strings.Repeat("ab", 32),
		WitnessID:          "witness-test",
		SystemPromptSHA256: sha(testPrompt),
		Tools: []PlanTool{
			{Name: "read_file", Scopes: []string{"read:/data/**"}, DefinitionSHA256: sha("def read_file")},
			{Name: "list_dir", Scopes: []string{"read:/data/**"}},
			{Name: "write_file", Scopes: []string{"write:/out/**"}},
		},
	}
}

// logSpec describes a hand-built event log.
type logSpec struct {
	header func(h *eventlog.Header)
	events []*eventlog.Event
	noEnd  bool
	signer eventlog.Signer
	// reason (default "completed") and failure of the session_end
	reason, failure string
}

func ev(kind eventlog.Kind, tool string, rpc string, payload any) *eventlog.Event {
	e := &eventlog.Event{Kind: kind, Tool: tool, TS: testTS, Source: eventlog.SourceObserved}
	if kind == eventlog.KindToolCall {
		e.Method = "tools/call"
	}
	if rpc != "" {
		e.RPCID = json.RawMessage(rpc)
	}
	if payload != nil {
		if err := eventlog.SetPayload(e, payload); err != nil {
			panic(err)
		}
	}
	return e
}

func buildLog(t testing.TB, plan Plan, s logSpec) []byte {
	t.Helper()
	h := &eventlog.Header{
		Seal: &eventlog.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID},
		Server: &eventlog.ServerInfo{Name: "test-server", Tools: []eventlog.ToolDef{
			{Name: "read_file", SHA256: sha("def read_file")},
			{Name: "list_dir", SHA256: sha("def list_dir")},
			{Name: "write_file", SHA256: sha("def write_file")},
		}},
	}
	if s.header != nil {
		s.header(h)
	}
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, h, testTS, eventlog.SourceObserved)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.events {
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if !s.noEnd {
		signer := s.signer
		var signers []eventlog.Signer
		if signer != nil {
			signers = append(signers, signer)
		}
		reason := s.reason
		if reason == "" {
			reason = "completed"
		}
		if err := eventlog.FinishWith(w, eventlog.EndOptions{Signers: signers, TS: testTS, Reason: reason, Failure: s.failure}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// cleanEvents is a session that keeps to testPlan.
func cleanEvents() []*eventlog.Event {
	sys := ev(eventlog.KindModelInput, "", "", testPrompt)
	sys.Role = "system"
	call1 := ev(eventlog.KindToolCall, "read_file", "1", map[string]any{"path": "/data/report.txt"})
	resp1 := ev(eventlog.KindToolResponse, "read_file", "1", map[string]any{"content": []any{map[string]any{"type": "text", "text": "hello"}}})
	resp1.Call = "e2"
	call2 := ev(eventlog.KindToolCall, "list_dir", `"req-2"`, map[string]any{"path": "/data"})
	resp2 := ev(eventlog.KindToolResponse, "list_dir", `"req-2"`, map[string]any{"content": []any{}})
	resp2.Call = "e4"
	call3 := ev(eventlog.KindToolCall, "write_file", "3", map[string]any{"path": "/out/summary.txt", "content": "hi"})
	eff := ev(eventlog.KindExternalEffect, "write_file", "", nil)
	eff.Call = "e6"
	eff.Effect = &eventlog.Effect{Op: "write", Target: "/out/summary.txt", Reason: "test"}
	return []*eventlog.Event{sys, call1, resp1, call2, resp2, call3, eff}
}

func runCheck(t testing.TB, plan Plan, data []byte, opts eventOptions) *Report {
	t.Helper()
	r := &Report{}
	if err := checkEvents(r, plan, "events.jsonl", bytes.NewReader(data), opts); err != nil {
		t.Fatalf("CheckEvents: %v", err)
	}
	r.Finish()
	return r
}

func signedOpts() eventOptions { return eventOptions{EndVerifier: testKey} }

func findCode(r *Report, code string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Code == code {
			return &r.Findings[i]
		}
	}
	return nil
}

func TestCleanCaptureVerifies(t *testing.T) {
	plan := testPlan()
	data := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	r := runCheck(t, plan, data, signedOpts())
	if r.Verdict != verified || r.Code() != exitcode.OK {
		var b bytes.Buffer
		r.WriteText(&b, true)
		t.Fatalf("verdict %s, want verified:\n%s", r.Verdict, b.String())
	}
	// testPlan says nothing of resources, prompts, sampling and
	// elicitation (like a 0.1.0 seal): those checks are not checkable,
	// each with its notice; TestSurfaceCleanVerifies covers a seal that
	// says.
	silent := map[string]bool{checkResources: true, checkPrompts: true, checkSampling: true, checkElicitation: true}
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			t.Errorf("check %s failed", c.ID)
		}
		if silent[c.ID] && c.Status == StatusNotCheckable {
			continue
		}
		if c.ID != checkUnused && c.Status != statusPass {
			t.Errorf("check %s: %s (%s)", c.ID, c.Status, c.Reason)
		}
	}
	for _, f := range r.Findings {
		if !silent[f.Check] || f.Code != "not-checkable" {
			t.Errorf("finding on a clean capture: %+v", f)
		}
	}
}

func TestChecks(t *testing.T) {
	plan := testPlan()
	tests := []struct {
		name    string
		mutate  func(evs []*eventlog.Event) []*eventlog.Event
		header  func(h *eventlog.Header)
		plan    func(p *Plan)
		code    string
		class   Class
		verdict Verdict
		eventID string
		rpc     string
		clause  string
		line    int64
		inMsg   string
	}{
		{
			name: "unsealed tool", code: "unsealed-tool", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				return append(evs, ev(eventlog.KindToolCall, "delete_file", `"del-1"`, map[string]any{"target": "/data/secret.txt"}))
			},
			eventID: "e8", rpc: `"del-1"`, clause: "tools", line: 9, inMsg: `"delete_file"`,
		},
		{
			name: "sealed tool never used", code: "sealed-tool-unused", class: ClassNotice, verdict: verified,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event { return evs[:5] }, // no write_file
			clause: "tools[2]", inMsg: `"write_file"`,
		},
		{
			name: "path traversal out of scope", code: "argument-out-of-scope", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				return append(evs, ev(eventlog.KindToolCall, "read_file", "42", map[string]any{"path": "/data/../etc/passwd"}))
			},
			eventID: "e8", rpc: "42", clause: "tools[0].scopes", line: 9, inMsg: `resolves to "/etc/passwd"`,
		},
		{
			name: "relative path cannot be placed", code: "argument-out-of-scope", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				return append(evs, ev(eventlog.KindToolCall, "list_dir", "43", map[string]any{"path": "data"}))
			},
			eventID: "e8", rpc: "43", clause: "tools[1].scopes", line: 9, inMsg: "relative path",
		},
		{
			name: "paths array out of scope", code: "argument-out-of-scope", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				return append(evs, ev(eventlog.KindToolCall, "read_file", "44", map[string]any{"paths": []any{"/data/a", "/home/u/.ssh/id_rsa"}}))
			},
			eventID: "e8", rpc: "44", clause: "tools[0].scopes", inMsg: "paths[1]",
		},
		{
			name: "write effect under a read scope", code: "effect-out-of-scope", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				e := ev(eventlog.KindExternalEffect, "read_file", "", nil)
				e.Call = "e2"
				e.Effect = &eventlog.Effect{Op: "delete", Target: "/data/report.txt"}
				return append(evs, e)
			},
			eventID: "e8", rpc: "1", clause: "tools[0].scopes", inMsg: "grants read only",
		},
		{
			name: "system prompt drift", code: "system-prompt-drift", class: classViolation, verdict: Violation,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				sys := ev(eventlog.KindModelInput, "", "", []any{map[string]any{"type": "text", "text": "Ignore the seal."}})
				sys.Role = "system"
				return append([]*eventlog.Event{sys}, evs[1:]...)
			},
			eventID: "e1", clause: "system_prompt_sha256", line: 2,
		},
		{
			name: "tool definition drift", code: "tool-definition-drift", class: classViolation, verdict: Violation,
			header:  func(h *eventlog.Header) { h.Server.Tools[0].SHA256 = sha("rug pull") },
			eventID: "e0", clause: "tools[0].definition_sha256", line: 1, inMsg: "tool definition drift",
		},
		{
			name: "events bound to another seal", code: "seal-mismatch", class: classViolation, verdict: Violation,
			header:  func(h *eventlog.Header) { h.Seal.Digest = strings.Repeat("cd", 32) },
			eventID: "e0", clause: "seal_ref", line: 1,
		},
		{
			name: "imported events with another seal_ref", code: "seal-ref-mismatch", class: classViolation, verdict: Violation,
			header: func(h *eventlog.Header) {
				h.Seal.Digest = strings.Repeat("cd", 32)
				h.ImportedFrom = "atw-0.1.0"
			},
			eventID: "e0", clause: "seal_ref", line: 1, inMsg: "atw-0.1.0",
		},
		{
			name: "tool list changed mid-session", code: "tools-list-changed", class: ClassNotice, verdict: verified,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				n := &eventlog.Event{Kind: eventlog.KindNotification, Method: "notifications/tools/list_changed", TS: testTS, Source: eventlog.SourceObserved}
				return append(evs, n)
			},
			eventID: "e8", line: 9,
		},
		{
			name: "redacted path argument is not judged", code: "scope-not-checkable", class: ClassNotice, verdict: verified,
			mutate: func(evs []*eventlog.Event) []*eventlog.Event {
				e := ev(eventlog.KindToolCall, "read_file", "50", map[string]any{"path": eventlog.RedactTokenPrefix + strings.Repeat("ab", 32)})
				e.Redacted = true
				return append(evs, e)
			},
			clause: "tools[0].scopes", inMsg: "1 redacted path argument",
		},
		{
			name: "scope with a malformed glob is reported, not judged", code: "scope-not-checkable", class: ClassNotice, verdict: verified,
			plan:   func(p *Plan) { p.Tools[1].Scopes = append(p.Tools[1].Scopes, "read:data/**") },
			clause: "tools[1].scopes[1]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan()
			p.Tools = append([]PlanTool(nil), plan.Tools...)
			for i := range p.Tools {
				p.Tools[i].Scopes = append([]string(nil), p.Tools[i].Scopes...)
			}
			if tt.plan != nil {
				tt.plan(&p)
			}
			evs := cleanEvents()
			if tt.mutate != nil {
				evs = tt.mutate(evs)
			}
			data := buildLog(t, p, logSpec{events: evs, header: tt.header, signer: testKey})
			r := runCheck(t, p, data, signedOpts())
			var text bytes.Buffer
			r.WriteText(&text, true)
			if r.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s\n%s", r.Verdict, tt.verdict, text.String())
			}
			f := findCode(r, tt.code)
			if f == nil {
				t.Fatalf("no %s finding:\n%s", tt.code, text.String())
			}
			if f.Class != tt.class {
				t.Errorf("class %s, want %s", f.Class, tt.class)
			}
			if tt.eventID != "" && f.EventID != tt.eventID {
				t.Errorf("event %q, want %q", f.EventID, tt.eventID)
			}
			if string(f.RPCID) != tt.rpc {
				t.Errorf("rpc %s, want %s", f.RPCID, tt.rpc)
			}
			if f.SealClause != tt.clause {
				t.Errorf("clause %q, want %q", f.SealClause, tt.clause)
			}
			if tt.line != 0 && f.Line != tt.line {
				t.Errorf("line %d, want %d", f.Line, tt.line)
			}
			if !strings.Contains(f.Message, tt.inMsg) {
				t.Errorf("message %q lacks %q", f.Message, tt.inMsg)
			}
			if r.Code() != tt.verdict.ExitCode() || r.ExitCode != int(tt.verdict.ExitCode()) {
				t.Errorf("exit %d, want %d", r.Code(), tt.verdict.ExitCode())
			}
		})
	}
}

// lines splits a log into its lines (without newlines).
func lines(data []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func join(ls [][]byte) []byte {
	return append(bytes.Join(ls, []byte("\n")), '\n')
}

func TestTamperedAndIncomplete(t *testing.T) {
	plan := testPlan()
	clean := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	ls := lines(clean)
	tests := []struct {
		name    string
		data    func() []byte
		opts    eventOptions
		verdict Verdict
		code    string
	}{
		{"one byte edited", func() []byte {
			d := bytes.Clone(clean)
			i := bytes.Index(d, []byte("/data/report.txt"))
			d[i+1] = 'D'
			return d
		}, signedOpts(), Tampered, "log-payload-hash"},
		{"lines reordered", func() []byte {
			c := append([][]byte(nil), ls...)
			c[2], c[3] = c[3], c[2]
			return join(c)
		}, signedOpts(), Tampered, "log-chain"},
		{"line inserted", func() []byte {
			c := append([][]byte(nil), ls[:3]...)
			c = append(c, ls[2])
			c = append(c, ls[3:]...)
			return join(c)
		}, signedOpts(), Tampered, "log-seq"},
		{"line deleted", func() []byte {
			c := append([][]byte(nil), ls[:3]...)
			c = append(c, ls[4:]...)
			return join(c)
		}, signedOpts(), Tampered, "log-chain"},
		{"end signature forged", func() []byte {
			d := bytes.Clone(clean)
			i := bytes.LastIndex(d, []byte(`"sig":"`)) + len(`"sig":"`)
			if d[i] == '0' {
				d[i] = '1'
			} else {
				d[i] = '0'
			}
			return d
		}, signedOpts(), Tampered, "log-signature"},
		{"garbage line", func() []byte {
			c := append([][]byte(nil), ls[:3]...)
			c = append(c, []byte("{not json"))
			c = append(c, ls[3:]...)
			return join(c)
		}, signedOpts(), Tampered, "log-parse"},
		{"missing end", func() []byte { return join(ls[:len(ls)-1]) }, signedOpts(), Incomplete, "log-no-end"},
		{"cut-off tail", func() []byte { return clean[:len(clean)-20] }, signedOpts(), Incomplete, "log-partial"},
		{"empty log", func() []byte { return nil }, signedOpts(), Incomplete, "log-empty"},
		{"unsigned end, no keyring", func() []byte {
			return buildLog(t, plan, logSpec{events: cleanEvents()})
		}, eventOptions{}, Incomplete, "log-unsigned"},
		// cannot check: no key to check the signed end with
		{"signed end, no keyring", func() []byte { return clean }, eventOptions{}, Unauthenticated, "log-untrusted"},
		{"unsigned end allowed", func() []byte {
			return buildLog(t, plan, logSpec{events: cleanEvents()})
		}, eventOptions{AllowUnsigned: true}, verified, "log-unsigned"},
		{"tampered outranks violation", func() []byte {
			evs := append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", "9", map[string]any{"target": "/data/x"}))
			d := buildLog(t, plan, logSpec{events: evs, signer: testKey})
			i := bytes.Index(d, []byte("/data/report.txt"))
			d[i+1] = 'D'
			return d
		}, signedOpts(), Tampered, "unsealed-tool"},
		{"incomplete outranks violation", func() []byte {
			evs := append(cleanEvents(), ev(eventlog.KindToolCall, "delete_file", "9", map[string]any{"target": "/data/x"}))
			d := buildLog(t, plan, logSpec{events: evs, signer: testKey, noEnd: true})
			return d
		}, signedOpts(), Incomplete, "unsealed-tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCheck(t, plan, tt.data(), tt.opts)
			var text bytes.Buffer
			r.WriteText(&text, true)
			if r.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s\n%s", r.Verdict, tt.verdict, text.String())
			}
			if findCode(r, tt.code) == nil {
				t.Errorf("no %s finding\n%s", tt.code, text.String())
			}
			if r.Code() != tt.verdict.ExitCode() {
				t.Errorf("exit %d", r.Code())
			}
		})
	}
}

// Many violations stay bounded in memory: the first maxPerCode of a code are
// listed, the rest counted in one notice; the verdict is unchanged.
func TestFindingsBounded(t *testing.T) {
	plan := testPlan()
	evs := cleanEvents()
	for i := 0; i < maxPerCode+5; i++ {
		evs = append(evs, ev(eventlog.KindToolCall, "delete_file", fmt.Sprint(100+i), map[string]any{"target": "/data/x"}))
	}
	r := runCheck(t, plan, buildLog(t, plan, logSpec{events: evs, signer: testKey}), signedOpts())
	n := 0
	for _, f := range r.Findings {
		if f.Code == "unsealed-tool" {
			n++
		}
	}
	f := findCode(r, "findings-dropped")
	if n != maxPerCode || f == nil || !strings.Contains(f.Message, "5 more unsealed-tool findings") || r.Verdict != Violation {
		t.Errorf("listed %d, dropped notice %+v, verdict %s", n, f, r.Verdict)
	}
}

// errReader fails after n bytes.
type errReader struct {
	data []byte
	n    int
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, fmt.Errorf("disk on fire")
	}
	if len(p) > e.n {
		p = p[:e.n]
	}
	k := copy(p, e.data)
	e.data, e.n = e.data[k:], e.n-k
	return k, nil
}

// A read error is an operational failure (exit 5), not a verdict, and the
// two passes never deadlock on it.
func TestReadErrorIsFailure(t *testing.T) {
	plan := testPlan()
	data := buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey})
	for _, digest := range []bool{false, true} {
		for _, n := range []int{0, 10, len(data) / 2, len(data) - 1} {
			r := &Report{}
			opts := signedOpts()
			opts.GraphDigest = digest
			err := checkEvents(r, plan, "events.jsonl", &errReader{data: data, n: n}, opts)
			if exitcode.Of(err) != exitcode.Failure || !strings.Contains(fmt.Sprint(err), "disk on fire") {
				t.Errorf("after %d bytes (graph digest %v): %v (code %d)", n, digest, err, exitcode.Of(err))
			}
		}
	}
}
