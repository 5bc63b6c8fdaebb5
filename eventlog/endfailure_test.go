package eventlog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func TestEndFailureRule(t *testing.T) {
	for _, c := range []struct {
		end      End
		want     string
		inferred bool
	}{
		{End{Reason: "completed"}, "", false},
		{End{Reason: "completed; server exit 0"}, "", false},
		{End{Reason: "completed; shutdown needed SIGTERM; server signal: terminated"}, "", false},
		{End{Reason: "imported"}, "", false},
		{End{Reason: "appended"}, "", false},
		{End{Reason: "append stopped at stdin line 3"}, "", false},
		{End{Reason: ""}, "", false},
		{End{Reason: "error: server did not answer initialize (id 1) within 300ms"}, "error: server did not answer initialize (id 1) within 300ms", true},
		{End{Reason: "error: x; server exit status 3"}, "error: x; server exit status 3", true},
		{End{Reason: "server did not start"}, "server did not start", true},
		{End{Reason: "server did not start; server exit status 1"}, "server did not start; server exit status 1", true},
		{End{Reason: "1 tool call(s) without a response"}, "1 tool call(s) without a response", true},
		{End{Reason: "12 tool call(s) without a response; server exit status 2"}, "12 tool call(s) without a response; server exit status 2", true},
		{End{Reason: "recording failed, events after the failure are missing: disk full"}, "recording failed, events after the failure are missing: disk full", true},
		// near misses are not failures
		{End{Reason: "errors: none"}, "", false},
		{End{Reason: "tool call(s) without a response"}, "", false},
		{End{Reason: "1 tool call(s) without a responder"}, "", false},
		{End{Reason: "the server did not start"}, "", false},
		// end.failure wins over the reason, and needs no rule
		{End{Reason: "completed", Failure: "line over the limit"}, "line over the limit", false},
		{End{Reason: "error: a", Failure: "b"}, "b", false},
	} {
		got, inf := EndFailure(&c.end)
		if got != c.want || inf != c.inferred {
			t.Errorf("EndFailure(%+v) = %q, %v; want %q, %v", c.end, got, inf, c.want, c.inferred)
		}
	}
	if f, _ := EndFailure(nil); f != "" {
		t.Error("nil end")
	}
}

// failedLog writes a short log ended with the given reason and failure.
func failedLog(t *testing.T, reason, failure string, signers ...Signer) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{Server: &ServerInfo{Name: "stub"}}, frozenTS, SourceObserved)
	must(t, err)
	call := &Event{Kind: KindToolCall, Tool: "read_file", Method: "tools/call", TS: frozenTS, Source: SourceObserved}
	must(t, SetPayload(call, map[string]any{"path": "/data/x"}))
	must(t, w.Append(call))
	must(t, FinishWith(w, EndOptions{Signers: signers, TS: frozenTS, Reason: reason, Failure: failure}))
	return buf.Bytes()
}

func TestVerifyLogEndFailure(t *testing.T) {
	data := failedLog(t, "1 tool call(s) without a response", "server died mid-call", goodSigner)
	rep := wantStatus(t, "failed recording", data, VerifyLogOptions{Verifier: trusted}, StatusIncomplete, exitcode.Incomplete)
	if len(rep.Findings) != 1 || rep.Findings[0].Code != FindFailure || rep.Findings[0].Line != 3 ||
		!strings.Contains(rep.Findings[0].Message, "server died mid-call") {
		t.Fatalf("findings %v", rep.Findings)
	}
	if !rep.Ended || rep.Signatures[0].Status != "valid" {
		t.Fatalf("the end is intact and signed: %+v", rep)
	}
	_, err := verify(data, VerifyLogOptions{Verifier: trusted})
	if h := exitcode.HintOf(err); !strings.Contains(h, "recording failed") {
		t.Errorf("hint %q", h)
	}

	// Removing the failure (or changing it) breaks the end's signature.
	for _, forged := range [][]byte{
		bytes.Replace(data, []byte(`"failure":"server died mid-call",`), nil, 1),
		bytes.Replace(data, []byte(`"failure":"server died mid-call"`), []byte(`"failure":"server died"`), 1),
	} {
		if bytes.Equal(forged, data) {
			t.Fatal("the forgery changed nothing")
		}
		rep := wantStatus(t, "failure removed", forged, VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
		found := false
		for _, f := range rep.Findings {
			found = found || f.Code == FindSignature
		}
		if !found {
			t.Fatalf("no signature finding: %v", rep.Findings)
		}
	}

	// An old log: no end.failure, the reason says it.
	old := failedLog(t, "error: server sent a line larger than the maximum line size", "", goodSigner)
	rep = wantStatus(t, "old failed recording", old, VerifyLogOptions{Verifier: trusted}, StatusIncomplete, exitcode.Incomplete)
	if rep.Findings[0].Code != FindFailure || !strings.Contains(rep.Findings[0].Message, "read from the end's reason") {
		t.Fatalf("findings %v", rep.Findings)
	}
	// and a log that completed is ok
	wantStatus(t, "completed", failedLog(t, "completed; server exit 0", "", goodSigner), VerifyLogOptions{Verifier: trusted}, StatusOK, exitcode.OK)
}
