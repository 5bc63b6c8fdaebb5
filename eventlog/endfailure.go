package eventlog

import (
	"regexp"
	"strings"
)

// EndFailure says whether a session_end records that the recording failed,
// and why. End.Failure, when set, is the answer. Logs written before that
// field existed put the failure in End.Reason; for them (End.Failure empty)
// the reason is read by a fixed rule, the reasons today's writers give when
// the recording did not complete:
//
//   - "error: …" (a capture error: the server did not answer, broke the
//     protocol, sent a line over the limit);
//   - "recording failed…" (the proxy abandoned or could not write the
//     recording);
//   - "server did not start";
//   - "N tool call(s) without a response" (the server died or the capture
//     ended mid-call).
//
// Each may be followed by "; shutdown needed …" or "; server …", which
// describe how the server exited and are not failures by themselves. Any
// other reason ("completed", "imported", "appended", "append stopped at …")
// is not a failure. inferred is true when the failure was read from the
// reason. docs/design/verdicts.md records the rule.
func EndFailure(e *End) (failure string, inferred bool) {
	if e == nil {
		return "", false
	}
	if e.Failure != "" {
		return e.Failure, false
	}
	if reasonIsFailure(e.Reason) {
		return e.Reason, true
	}
	return "", false
}

// openCallsReason matches the reason a deriver gives for calls left open.
var openCallsReason = regexp.MustCompile(`^[0-9]+ tool call\(s\) without a response(;|$)`)

// reasonIsFailure applies EndFailure's rule to a reason.
func reasonIsFailure(reason string) bool {
	base, _, _ := strings.Cut(reason, "; ")
	switch {
	case strings.HasPrefix(reason, "error: "),
		strings.HasPrefix(reason, "recording failed"),
		base == "server did not start",
		openCallsReason.MatchString(reason):
		return true
	}
	return false
}
