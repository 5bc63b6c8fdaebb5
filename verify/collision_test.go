package verify

import (
	"strconv"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// TestSessionIDCollision: a clean, signed session whose log records that
// the upstream handed its session id to another client too
// (witness/session-id-collision, as the HTTP proxy writes it) is
// incomplete, with the seal and integrity only, whatever the payload says;
// the same log without the event verifies.
func TestSessionIDCollision(t *testing.T) {
	plan := testPlan()
	if r := runCheck(t, plan, buildLog(t, plan, logSpec{events: cleanEvents(), signer: testKey}), signedOpts()); r.Verdict != verified {
		t.Fatalf("without the event: %s", r.Verdict)
	}
	for _, tc := range []struct {
		name    string
		payload any
		msg     string
	}{
		{"split", map[string]any{"upstream_session_id": "s-1", "client_session_id": "s-1-witness-1", "exchange": 3, "sessions": []string{"mcp/1", "mcp/2"}, "split": true},
			`the upstream handed the session id "s-1" to another client too (exchange 3; logs mcp/1, mcp/2): the proxy gave the later client "s-1-witness-1" and kept each client's messages in its own log, but the upstream serves them as one session, so its answers here may depend on the other client's requests`},
		{"not split", map[string]any{"upstream_session_id": "/messages?sessionId=1", "exchange": 4, "sessions": []string{"mcp/1"}, "split": false},
			`the upstream handed the session id "/messages?sessionId=1" to another client too (exchange 4; logs mcp/1): both clients' requests are in this one log, ambiguous as to client`},
		{"no payload", nil, "the upstream handed this session's id to another client too: it serves them as one session, so its answers here may depend on the other client's requests"},
		{"odd payload", []any{1, 2}, "the upstream handed this session's id to another client too: it serves them as one session, so its answers here may depend on the other client's requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := ev(eventlog.KindNotification, "", "", tc.payload)
			n.Method = eventlog.MethodSessionIDCollision
			evs := append([]*eventlog.Event{n}, cleanEvents()...)
			for _, e := range evs[1:] {
				if e.Call != "" { // the event shifts every id by one
					e.Call = shiftID(e.Call)
				}
			}
			data := buildLog(t, plan, logSpec{events: evs, signer: testKey})
			for _, integrity := range []bool{false, true} {
				opts := signedOpts()
				opts.IntegrityOnly = integrity
				r := runCheck(t, plan, data, opts)
				f := findCode(r, "session-id-collision")
				if r.Verdict != Incomplete || r.Code() != exitcode.Incomplete || f == nil {
					t.Fatalf("integrity only %v: verdict %s, findings %+v", integrity, r.Verdict, r.Findings)
				}
				if f.Class != classIncomplete || f.Check != checkSession || f.EventID != "e1" || f.Line != 2 || f.Message != tc.msg {
					t.Errorf("integrity only %v: %+v", integrity, f)
				}
				for _, o := range r.Findings {
					if o.Code != "session-id-collision" && o.Class != ClassNotice {
						t.Errorf("integrity only %v: another finding: %+v", integrity, o)
					}
				}
				listed := false
				for _, c := range r.Checks {
					if c.ID == checkSession {
						listed = c.Status == StatusFail
					}
				}
				if !listed {
					t.Errorf("integrity only %v: check %s not listed as failed: %+v", integrity, checkSession, r.Checks)
				}
			}
		})
	}
}

func shiftID(id string) string {
	n, _ := strconv.Atoi(id[1:])
	return "e" + strconv.Itoa(n+1)
}
