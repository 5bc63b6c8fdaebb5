package core

import (
	"fmt"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
)

// Collective failures the timing rules give.
const (
	FailureDeadlinePassed = "deadline-passed"
	FailureRequestClosed  = "request-closed"
	// FailureRequestNotOpen: the answer's request was never shown to the
	// runtime, was withheld, or was already answered, so it cannot be
	// matched.
	FailureRequestNotOpen = "request-not-open"
	// FailureRestart is the reason of the operationFailed item restart
	// makes of an admitted request the agent has not acknowledged.
	FailureRestart = "restart"
)

// DispositionInterrupted is the disposition of a check a restart
// interrupted: it binds nothing.
const DispositionInterrupted = "interrupted"

// passed says whether a deadline (zero: none) has passed at t.
func passed(deadline, t time.Time) bool {
	return !deadline.IsZero() && !t.Before(deadline)
}

// AnswerFailure is the timing rule of an answer: just before it binds
// (end, its check's end) its request must still match: shown and not yet
// answered (open), not closed and before its deadline. When it no longer
// matches the answer is refused with this collective failure, and its
// check still commits, withheld. "" when the answer binds.
func AnswerFailure(open bool, closedAt, deadline, end time.Time) string {
	switch {
	case !open:
		return FailureRequestNotOpen
	case !closedAt.IsZero() && !end.Before(closedAt):
		return FailureRequestClosed
	case passed(deadline, end):
		return FailureDeadlinePassed
	}
	return ""
}

// CollectiveStartFailure is the timing rule of a gather or all_gather: one
// whose deadline passed during its check fails as deadline-passed, and
// nothing posts. "" when it starts.
func CollectiveStartFailure(deadline, end time.Time) string {
	if passed(deadline, end) {
		return FailureDeadlinePassed
	}
	return ""
}

// RequestRetiresUnchecked is the timing rule of a received request whose
// deadline passed before its check started: it retires unchecked and is
// never presented.
func RequestRetiresUnchecked(deadline, start time.Time) bool { return passed(deadline, start) }

// RequestFailure is the timing rule of a received request whose deadline
// passed during its check: it is withheld (deadline-passed), not presented.
func RequestFailure(deadline, end time.Time) string {
	if passed(deadline, end) {
		return FailureDeadlinePassed
	}
	return ""
}

// Interrupted records the check of c that a restart interrupted: the
// check commits as interrupted, with no judgment applied, and binds
// nothing (no history record, no operation starts, no request is
// claimed).
func (r *Runner) Interrupted(c Candidate) (*Check, error) {
	earlier, marks, omitted := r.hist.window(c.Message.Conversation, nil)
	in, err := r.eng.BuildInput(c, earlier, omitted)
	if err != nil {
		return nil, err
	}
	in.HistoryMarks = marks
	id, err := CheckID(in)
	if err != nil {
		return nil, err
	}
	return &Check{CheckID: id, Input: in, Trace: []Judgment{},
		Decision: Decision{DecidedBy: []DecidingRule{}, Findings: []Finding{}, Disposition: DispositionInterrupted}}, nil
}

// Restart applies a daemon restart at time at (RFC 3339): collective state
// is process-local, so it is lost. Every admitted request the agent has not
// acknowledged, still open, becomes an operationFailed item, admitted as
// any failure is (the returned checks, in operation order); a request that
// was never shown retires without a trace the agent can see.
func (r *Runner) Restart(at string) ([]*Check, error) {
	var out []*Check
	for _, id := range sortedOps(r.ops) {
		o := r.ops[id]
		if o.request == "" || !o.shown || o.acknowledged || o.claimed || !o.closedAt.IsZero() {
			continue
		}
		req := r.hist.byEvent[o.request]
		if req == nil {
			continue
		}
		f := Candidate{Event: fmt.Sprintf("%s.restart", o.request), ts: at, Message: eventlog.Message{
			Direction: Incoming, Conversation: req.c.Message.Conversation, Sender: SocialHarness,
			Recipients: []string{r.eng.LocalAgent}, Operation: OpOperationFailed, OperationID: id,
			Failure: FailureRestart, Text: fmt.Sprintf("operation %s failed: the endpoint restarted before the request was answered", id)}}
		chk, err := r.failure(f)
		if err != nil {
			return nil, err
		}
		out = append(out, chk)
	}
	r.ops = map[string]*operation{}
	return out, nil
}

func sortedOps(m map[string]*operation) []string {
	keys := map[string]string{}
	for k := range m {
		keys[k] = k
	}
	return sortedKeys(keys)
}
