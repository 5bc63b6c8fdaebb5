package core

import (
	"fmt"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
)

// Collective operation steps (eventlog.Message.Operation values).
const (
	OpDirect          = "direct"
	OpMulticast       = "multicast"
	OpGather          = "gather"
	OpAllGather       = "all_gather"
	OpAnswer          = "answer"
	OpRequest         = "request"
	OpResult          = "result"
	OpOperationFailed = "operation_failed"
	OpClose           = "close"
	OpClaim           = "claim"
	OpDeadline        = "deadline"
)

// Step is one row of the seed's collective tables: what a direction's step
// checks, the candidate its check sees, and what a refusal means.
type Step struct {
	Direction string `json:"direction"`
	Operation string `json:"operation"`
	Checked   bool   `json:"checked"`
	Candidate string `json:"candidate"`
	Refusal   string `json:"refusal,omitempty"`
}

// Refusal meanings (the seed's "Outgoing collective checks" table).
const (
	RefusalNothingBinds     = "nothing binds"
	RefusalNeverStarts      = "nothing binds and the operation never starts: no deadline timer, no close"
	RefusalNoRequestPost    = "no request post binds and the operation never starts"
	RefusalRequestStaysOpen = "nothing binds and the request stays open"
	RefusalWithheld         = "withheld: the runtime is not shown it"
	RefusalUnanswerable     = "withheld: the request stays unanswerable"
	RefusalAnswerWithheld   = `the answer is projected as {kind: "withheld", checkId, reason}`
)

const protocolPath = "none: the step continues through its protocol path and is never semantically checked"

var steps = []Step{
	{Outgoing, OpDirect, true, "its post", RefusalNothingBinds},
	{Outgoing, OpMulticast, true, "its post", RefusalNothingBinds},
	{Outgoing, OpAllGather, true, "its one group post", RefusalNeverStarts},
	{Outgoing, OpGather, true, "the operation, once, before any request post", RefusalNoRequestPost},
	{Outgoing, OpAnswer, true, "its response post, checked before the request is claimed", RefusalRequestStaysOpen},
	{Outgoing, OpRequest, false, "none: a gather's request post binds only against its admitted check, with exactly the content it assessed", ""},
	{Outgoing, OpResult, false, protocolPath, ""},
	{Outgoing, OpOperationFailed, false, protocolPath, ""},
	{Outgoing, OpClose, false, protocolPath, ""},
	{Outgoing, OpClaim, false, protocolPath, ""},
	{Outgoing, OpDeadline, false, protocolPath, ""},
	{Incoming, OpDirect, true, "the message, unchanged", RefusalWithheld},
	{Incoming, OpMulticast, true, "the message, unchanged", RefusalWithheld},
	{Incoming, OpRequest, true, "its question, exactly as the model reads it before the answer instructions, form included", RefusalUnanswerable},
	{Incoming, OpGather, true, "its question, exactly as the model reads it before the answer instructions, form included", RefusalUnanswerable},
	{Incoming, OpAllGather, true, "its question, exactly as the model reads it before the answer instructions, form included", RefusalUnanswerable},
	{Incoming, OpResult, true, "each answer on its own, as its line of the result; the shell of members and outcomes is always admitted", RefusalAnswerWithheld},
	{Incoming, OpOperationFailed, false, "none: the text is the endpoint's own, admitted under one deterministic audit record", ""},
	{Incoming, OpAnswer, false, "none: an answer post reaches the runtime only as its line of a result", ""},
	{Incoming, OpClose, false, protocolPath, ""},
	{Incoming, OpClaim, false, protocolPath, ""},
	{Incoming, OpDeadline, false, protocolPath, ""},
}

// Steps returns the collective tables, one row per direction and step.
func Steps() []Step { return append([]Step(nil), steps...) }

// StepOf returns the row of a direction's step; an unknown pair is an
// unchecked step.
func StepOf(direction, operation string) Step {
	for _, s := range steps {
		if s.Direction == direction && s.Operation == operation {
			return s
		}
	}
	return Step{Direction: direction, Operation: operation, Candidate: protocolPath}
}

// operation is the local state of one collective operation, as far as the
// evidence read so far shows it.
type operation struct {
	id       string
	deadline time.Time // zero: none recorded
	closedAt time.Time // zero: open
	// outgoing gather/all_gather
	started, refused, failed bool
	// an incoming request
	request      string // its event
	shown        bool   // its item reached the inbox
	withheldBy   string // the check that withheld it
	retired      bool   // retired unchecked
	acknowledged bool   // the agent's answer bound
	claimed      bool   // a claim of the request was recorded (the answer's bind may be read after it)
}

// Runner re-evaluates a stream of message events as the daemon would: the
// collective tables decide which steps are checked and what each check
// sees, windows are the daemon's runtime-visible history, timing rules
// apply, and admitted results are projected.
type Runner struct {
	eng  *Engine
	hist *daemonHistory
	ops  map[string]*operation
	// Elapsed returns how long the check of a candidate took (from a
	// recorded audit: RecordedProvider.Elapsed); nil or 0 when unknown:
	// re-evaluation has no clock.
	Elapsed func(event string) time.Duration
	// Closes are the times the whole log records each operation closing
	// (a close, or an operation failure), read ahead of the stream
	// (CloseTimes): a close logged after an answer can still have been
	// certified during the answer's check, before its claim, and then the
	// daemon refused the answer ("a close or the deadline can still arrive
	// during the check"). nil: only closes read so far count.
	Closes map[string]time.Time
	// Projections are the local projections of the admitted results read
	// so far, in order.
	Projections []Projection
}

// NewRunner prepares a runner over eng.
func NewRunner(eng *Engine) *Runner {
	return &Runner{eng: eng, hist: newDaemonHistory(eng.Policy.MaximumHistoryRecords), ops: map[string]*operation{}}
}

func (r *Runner) op(id string) *operation {
	if id == "" {
		return nil
	}
	o := r.ops[id]
	if o == nil {
		o = &operation{id: id}
		r.ops[id] = o
	}
	return o
}

// times returns a candidate's check start (its event time) and end (start
// plus the recorded duration).
func (r *Runner) times(c Candidate) (time.Time, time.Time) {
	start, _ := time.Parse(time.RFC3339Nano, c.ts)
	end := start
	if r.Elapsed != nil {
		end = start.Add(r.Elapsed(c.Event))
	}
	return start, end
}

// check builds the input of c from the window of its conversation (cut
// before cut when set), adds the evidence gaps, and runs the chain.
func (r *Runner) check(c Candidate, cut *historyEntry, gaps []string) (*Check, error) {
	earlier, marks, omitted := r.hist.window(c.Message.Conversation, cut)
	in, err := r.eng.BuildInput(c, earlier, omitted)
	if err != nil {
		return nil, err
	}
	in.HistoryMarks = marks
	in.EvidenceGaps = append(in.EvidenceGaps, intentGaps(c)...)
	in.EvidenceGaps = append(in.EvidenceGaps, gaps...)
	chk, err := r.eng.Check(in)
	if chk != nil && r.Elapsed != nil {
		chk.ElapsedMs = float64(r.Elapsed(c.Event)) / float64(time.Millisecond)
	}
	return chk, err
}

// Step reads one message event and returns the checks it committed, in
// order: none for a step the tables do not check (or a request retired
// unchecked), one for most, one per checked answer (and the question) for
// a result.
func (r *Runner) Step(c Candidate) ([]*Check, error) {
	m := c.Message
	step := StepOf(m.Direction, m.Operation)
	o := r.op(m.OperationID)
	if o != nil && m.Deadline != "" {
		o.deadline, _ = time.Parse(time.RFC3339Nano, m.Deadline)
	}
	start, end := r.times(c)
	switch {
	case m.Direction == Incoming && m.Operation == OpResult:
		return r.result(c, o)
	case m.Direction == Incoming && m.Operation == OpOperationFailed:
		chk, err := r.failure(c)
		if err != nil {
			return nil, err
		}
		return []*Check{chk}, nil
	case !step.Checked:
		r.protocol(c, o, start)
		return nil, nil
	}
	var gaps []string
	if m.Direction == Outgoing && m.Operation == OpAnswer && m.OperationID != "" && (o == nil || o.request == "") {
		gaps = append(gaps, fmt.Sprintf("missing record: the request of operation %s", m.OperationID))
	}
	if m.Direction == Incoming && isRequest(m.Operation) && o != nil {
		o.request = c.Event
		if RequestRetiresUnchecked(o.deadline, start) {
			o.retired = true
			r.hist.add(c, VisibleAssessor)
			return nil, nil
		}
	}
	chk, err := r.check(c, nil, gaps)
	if err != nil {
		return nil, err
	}
	d := &chk.Decision
	if o != nil {
		switch {
		case m.Direction == Incoming && isRequest(m.Operation):
			if f := RequestFailure(o.deadline, end); f != "" && d.Disposition == DispositionAdmitted {
				d.Disposition, d.CollectiveFailure, d.Guidance = DispositionWithheld, f, nil
			}
			o.shown = d.Disposition == DispositionAdmitted
			if !o.shown {
				o.withheldBy = chk.CheckID
			}
		case m.Direction == Outgoing && m.Operation == OpAnswer:
			if d.Disposition == DispositionAdmitted {
				closedAt := o.closedAt
				if t, ok := r.Closes[o.id]; ok && closedAt.IsZero() && t.Before(end) {
					// logged after the answer, certified before the check's
					// end (its claim): the daemon saw it. At the same time as
					// the end, or with no duration, the log order decides:
					// after the answer.
					closedAt = t
				}
				if f := AnswerFailure(o.shown && !o.acknowledged, closedAt, o.deadline, end); f != "" {
					d.Disposition, d.CollectiveFailure = DispositionWithheld, f
				} else {
					o.acknowledged = true
				}
			}
		case m.Direction == Outgoing && (m.Operation == OpGather || m.Operation == OpAllGather):
			if d.Disposition == DispositionAdmitted {
				if f := CollectiveStartFailure(o.deadline, end); f != "" {
					d.Disposition, d.CollectiveFailure, o.failed = DispositionWithheld, f, true
				} else {
					o.started = true
				}
			} else {
				o.refused = true
			}
		}
	}
	if bound(c, d.Disposition) {
		r.hist.add(c, visibilityOf(c, d.Disposition))
	}
	return []*Check{chk}, nil
}

func isRequest(op string) bool { return op == OpRequest || op == OpGather || op == OpAllGather }

// bound says whether a checked step leaves a record: every incoming item
// is certified whatever the check said (withheld evidence stays history);
// an outgoing step binds only when admitted.
func bound(c Candidate, disposition string) bool {
	return c.Message.Direction == Incoming || disposition == DispositionAdmitted
}

// protocol applies a step the firewall never checks.
func (r *Runner) protocol(c Candidate, o *operation, at time.Time) {
	m := c.Message
	switch m.Operation {
	case OpClose:
		if o != nil && o.closedAt.IsZero() {
			o.closedAt = at
		}
	case OpDeadline:
		if o != nil && o.deadline.IsZero() {
			o.deadline = at
		}
	case OpClaim:
		if o != nil && m.Direction == Outgoing {
			o.claimed = true
		}
	case OpRequest, OpResult, OpAnswer:
		// certified posts: an outgoing request post, an outgoing result, a
		// peer's answer post. The runtime sees an answer only through an
		// admitted result.
		r.hist.add(c, VisibleAssessor)
	}
}

// failure admits an operation failure under one deterministic audit
// record: no middleware runs (the text is the endpoint's own), and the
// failure leaves a runtime-visible local evidence entry at its position.
func (r *Runner) failure(c Candidate) (*Check, error) {
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
	chk := &Check{CheckID: id, Input: in, Trace: []Judgment{},
		Decision: Decision{Reason: ReasonAdmission, DecidedBy: []DecidingRule{}, Cause: CauseDefault,
			Findings: []Finding{}, Disposition: DispositionAdmitted}}
	if o := r.ops[c.Message.OperationID]; o != nil && o.closedAt.IsZero() {
		o.closedAt, _ = time.Parse(time.RFC3339Nano, c.ts)
	}
	local := c
	local.Message.Sender = SocialHarness
	local.canon = nil
	r.hist.add(local, VisibleRuntime)
	return chk, nil
}

// result checks each answer of an incoming result on its own, from one
// evidence capture, against the window of its conversation before its
// certified record; the local agent's own answer and members without one
// are not checked. The question is shown when the runtime was shown the
// request, withheld under that check when a check withheld it, and
// otherwise checked with the result. The shell is always admitted.
func (r *Runner) result(c Candidate, o *operation) ([]*Check, error) {
	m := c.Message
	var out []*Check
	qs := QuestionShown
	var qcheck *Check
	switch {
	case o != nil && (o.shown || o.started):
	case o != nil && o.withheldBy != "":
		qs = QuestionWithheld
	default:
		qs = QuestionChecked
		q := Candidate{Event: c.Event + ".q", ts: c.ts, cause: c.cause, pending: c.pending, Message: eventlog.Message{
			Direction: Incoming, Conversation: m.Conversation, Sender: m.Sender, Recipients: m.Recipients,
			Text: m.Text, Operation: OpResult, OperationID: m.OperationID}}
		chk, err := r.check(q, nil, nil)
		if err != nil {
			return nil, err
		}
		qcheck = chk
	}
	answerChecks := make([]*Check, len(m.Answers))
	for i, a := range m.Answers {
		if a.Member == r.eng.LocalAgent || a.Outcome == "missing" {
			continue
		}
		ac := Candidate{Event: fmt.Sprintf("%s.a%d", c.Event, i), ts: c.ts, cause: c.cause, pending: c.pending, Message: eventlog.Message{
			Direction: Incoming, Conversation: m.Conversation, Sender: a.Member, Recipients: []string{r.eng.LocalAgent},
			Text: a.Text, Operation: OpResult, OperationID: m.OperationID}}
		var gaps []string
		rec := r.hist.post(a.Member, a.PostID)
		if a.PostID != "" && rec == nil {
			gaps = append(gaps, fmt.Sprintf("missing record: answer post %s of %s", a.PostID, a.Member))
		}
		chk, err := r.check(ac, rec, gaps)
		if err != nil {
			return nil, err
		}
		answerChecks[i] = chk
	}
	// commit together: marks, projection, the local evidence entry
	if qcheck != nil {
		out = append(out, qcheck)
	}
	for i, chk := range answerChecks {
		if chk == nil {
			continue
		}
		out = append(out, chk)
		if rec := r.hist.post(m.Answers[i].Member, m.Answers[i].PostID); rec != nil {
			if chk.Decision.Disposition == DispositionAdmitted {
				rec.vis = VisibleRuntime
			} else {
				rec.vis = VisibleWithheld
			}
		}
	}
	withheldBy := ""
	if o != nil {
		withheldBy = o.withheldBy
		if o.closedAt.IsZero() {
			o.closedAt, _ = time.Parse(time.RFC3339Nano, c.ts)
		}
	}
	p := Project(c, qs, withheldBy, qcheck, answerChecks, r.eng.Policy.Mode)
	r.Projections = append(r.Projections, p)
	local := c
	local.Message.Sender = SocialHarness
	local.Message.Answers = p.shownAnswers(m.Answers)
	local.canon = nil
	r.hist.add(local, VisibleRuntime)
	return out, nil
}

// CloseTimes records in closes the time c closes its operation, when c is
// a close, a result or an operation failure (the steps the Runner closes an
// operation on) and no earlier one was recorded: the read-ahead table of
// Runner.Closes.
func CloseTimes(closes map[string]time.Time, c Candidate) {
	m := c.Message
	if m.OperationID == "" || (m.Operation != OpClose && m.Operation != OpResult && m.Operation != OpOperationFailed) {
		return
	}
	if _, seen := closes[m.OperationID]; seen {
		return
	}
	if t, err := time.Parse(time.RFC3339Nano, c.ts); err == nil {
		closes[m.OperationID] = t
	}
}
