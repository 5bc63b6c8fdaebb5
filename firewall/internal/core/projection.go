package core

import (
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// How a result's question reached the runtime.
const (
	QuestionShown    = "shown"    // the runtime was shown the request
	QuestionWithheld = "withheld" // a check withheld the request
	QuestionChecked  = "checked"  // checked with the result
)

// Projected value kinds.
const (
	KindWithheld = "withheld"
	KindAnswer   = "answer"
	KindQuestion = "question"
)

// ProjectedValue is one line of a result's local projection: a withheld
// value is exactly {kind: "withheld", checkId, reason}; a shown answer
// keeps its member, outcome and text unchanged, with the advice guidance
// attaches.
type ProjectedValue struct {
	Kind    string        `json:"kind"`
	Member  string        `json:"member,omitempty"`
	Outcome string        `json:"outcome,omitempty"`
	Text    *string       `json:"text,omitempty"`
	CheckID string        `json:"checkId,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Advice  []Instruction `json:"advice,omitempty"`
}

// Projection is the local projection of one admitted result: what the
// runtime reads, against the canonical result that stays in the private
// queue and the audit.
type Projection struct {
	Event       string           `json:"event"`
	OperationID string           `json:"operationId"`
	Canonical   eventlog.Message `json:"canonical"`
	Question    ProjectedValue   `json:"question"`
	Answers     []ProjectedValue `json:"answers"`
}

func withheld(chk *Check) ProjectedValue {
	return ProjectedValue{Kind: KindWithheld, CheckID: chk.CheckID, Reason: withheldReason(chk.Decision)}
}

// withheldReason is the reason a withheld value carries: a timing rule's
// collective failure, else the decision's reason.
func withheldReason(d Decision) string {
	if d.CollectiveFailure != "" {
		return d.CollectiveFailure
	}
	return d.Reason
}

func advice(chk *Check) []Instruction {
	if chk == nil || chk.Decision.Guidance == nil || len(chk.Decision.Guidance.Instructions) == 0 {
		return nil
	}
	return append([]Instruction(nil), chk.Decision.Guidance.Instructions...)
}

// Project computes the local projection of the result c: each answer a
// check withheld becomes {kind: "withheld", checkId, reason}, a withheld
// question the same (withheldBy names the check that withheld its
// request); an admitted answer keeps its text and, as guidance mode does,
// carries its check's advice. Answers without a check (the agent's own,
// members without one) are shown as they are.
func Project(c Candidate, question string, withheldBy string, qcheck *Check, answers []*Check, mode string) Projection {
	m := c.Message
	p := Projection{Event: c.Event, OperationID: m.OperationID, Canonical: m, Answers: []ProjectedValue{}}
	text := m.Text
	switch {
	case question == QuestionWithheld:
		p.Question = ProjectedValue{Kind: KindWithheld, CheckID: withheldBy, Reason: "request-withheld"}
	case qcheck != nil && qcheck.Decision.Disposition != DispositionAdmitted:
		p.Question = withheld(qcheck)
	default:
		p.Question = ProjectedValue{Kind: KindQuestion, Text: &text, Advice: advice(qcheck)}
	}
	for i, a := range m.Answers {
		var chk *Check
		if i < len(answers) {
			chk = answers[i]
		}
		if chk != nil && chk.Decision.Disposition != DispositionAdmitted {
			p.Answers = append(p.Answers, withheld(chk))
			continue
		}
		t := a.Text
		p.Answers = append(p.Answers, ProjectedValue{Kind: KindAnswer, Member: a.Member, Outcome: a.Outcome, Text: &t, Advice: advice(chk)})
	}
	return p
}

// shownAnswers returns the answers as the runtime saw them, for the local
// evidence entry the result leaves: withheld ones keep member and mark,
// not their text.
func (p Projection) shownAnswers(answers []eventlog.Answer) []eventlog.Answer {
	out := make([]eventlog.Answer, 0, len(answers))
	for i, a := range answers {
		if i < len(p.Answers) && p.Answers[i].Kind == KindWithheld {
			out = append(out, eventlog.Answer{Member: a.Member, Outcome: "withheld"})
			continue
		}
		out = append(out, a)
	}
	return out
}

// projectedOfRecord is the projected value of one answer or question
// check record of an audit (operation "result"), with its canonical text
// (from the candidate's canonical bytes): what the overlay shows side by
// side. ok is false for any other record.
func projectedOfRecord(l AuditLine) (canonical string, projected []byte, ok bool, err error) {
	var perr error
	r := l.Reader(&perr)
	if r.String("operation", false) != OpResult {
		return "", nil, false, l.Err(perr)
	}
	var sender, text string
	if in := r.Object("input", false); in != nil {
		if c := in.Object("candidate", false); c != nil {
			if m := c.Object("message", false); m != nil {
				sender, text = m.String("sender", false), m.String("text", false)
			}
		}
	}
	v := ProjectedValue{Kind: KindAnswer, Member: sender, Text: &text}
	if ev := readCandidateEvent(r); strings.HasSuffix(ev, ".q") {
		v = ProjectedValue{Kind: KindQuestion, Text: &text}
	}
	if r.String("disposition", false) != DispositionAdmitted {
		reason := r.String("collectiveFailure", false)
		if j := r.Object("judgment", false); j != nil && reason == "" {
			reason = j.String("reason", false)
		}
		v = ProjectedValue{Kind: KindWithheld, CheckID: r.String("checkId", false), Reason: reason}
	} else if j := r.Object("judgment", false); j != nil {
		if gv := j.Value("guidance"); gv != nil && gv.Kind == jsontree.Object {
			g := j.Object("guidance", false)
			g.Objects("instructions", false, func(i int, in *jsontree.ObjectReader) {
				v.Advice = append(v.Advice, Instruction{Rule: in.String("rule", false), Text: in.String("text", false)})
			})
		}
	}
	if err := l.Err(perr); err != nil {
		return "", nil, false, err
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return "", nil, false, err
	}
	return text, b, true, nil
}

func readCandidateEvent(r *jsontree.ObjectReader) string {
	if in := r.Object("input", false); in != nil {
		if c := in.Object("candidate", false); c != nil {
			return c.String("event", false)
		}
	}
	return ""
}

// Overlay properties of collective checks.
const (
	// WCanonicalValue is the canonical text of a result's answer or
	// question a check assessed (what the private queue and the audit keep).
	WCanonicalValue = graph.NSWitness + "canonicalValue"
	// WProjectedValue is the canonical JSON of what the runtime read in its
	// place: the line unchanged (with any advice), or {kind: "withheld",
	// checkId, reason}.
	WProjectedValue = graph.NSWitness + "projectedValue"
	// WCollectiveFailure is a timing rule's collective failure.
	WCollectiveFailure = graph.NSWitness + "collectiveFailure"
	// WOperationID names the collective operation of a checked step.
	WOperationID = graph.NSWitness + "operationId"
)

// addCollectiveOverlay adds to a check's overlay node its collective
// failure and operation and, for a result's answer or question, the
// canonical value against the projected one.
func addCollectiveOverlay(n *graph.Node, l AuditLine) error {
	var perr error
	r := l.Reader(&perr)
	if f := r.String("collectiveFailure", false); f != "" {
		n.Add(WCollectiveFailure, graph.Str(f))
	}
	if in := r.Object("input", false); in != nil {
		if c := in.Object("candidate", false); c != nil {
			if m := c.Object("message", false); m != nil {
				if op := m.String("operationId", false); op != "" {
					n.Add(WOperationID, graph.Str(op))
				}
			}
		}
	}
	if err := l.Err(perr); err != nil {
		return err
	}
	canonical, projected, ok, err := projectedOfRecord(l)
	if err != nil || !ok {
		return err
	}
	n.Add(WCanonicalValue, graph.Str(canonical))
	n.Add(WProjectedValue, graph.Str(string(projected)))
	return nil
}

// resultEventOf returns the result event of an answer or question check
// ("e7.a1", "e7.q" -> "e7"), or "".
func resultEventOf(ev string) string {
	i := strings.LastIndexByte(ev, '.')
	if i < 0 {
		return ""
	}
	s := ev[i+1:]
	if s == "q" || (len(s) > 1 && s[0] == 'a' && strings.Trim(s[1:], "0123456789") == "") {
		return ev[:i]
	}
	return ""
}
