package core

import (
	"fmt"
	"strings"
)

// SendFeedback is one piece of permitted feedback of a refused send: the
// rule, its next action, and the feedback text the owner or composition
// registered (empty when the rule has none the reason permits).
type SendFeedback struct {
	Rule       string `json:"rule,omitempty"`
	NextAction string `json:"nextAction"`
	Text       string `json:"text,omitempty"`
}

// SendError is the FirewallSendError a host receives for a refused send
// (the seed's "Outgoing projection"): an opaque check reference, a reason
// and the permitted feedback. Its Error text names the reason, every next
// action and the check reference, so a host that keeps only text can act
// on it and correlate the refusal with the operator audit. It never holds
// provider output or private evidence.
type SendError struct {
	CheckID  string         `json:"checkId"`
	Reason   string         `json:"reason"`
	Feedback []SendFeedback `json:"feedback"`
}

// sendReasonText is the seed's wording of each refusal reason.
var sendReasonText = map[string]string{
	ReasonProhibition:        "prohibited message",
	ReasonUnresolvedEvidence: "unresolved required evidence",
	ReasonUnavailable:        "unavailable assessment",
	ReasonNormViolation:      "norm violation",
	ReasonApprovalRequired:   "required approval absent",
}

// SendReasonText returns the seed's wording of a refusal reason ("" for
// admission or an unknown reason).
func SendReasonText(reason string) string { return sendReasonText[reason] }

// Error renders the text a host sees:
//
//	firewall refused the send: norm violation; next action: revise (credentials: Remove the credential.); check chk_…
//
// one "next action:" segment per feedback entry, in decidedBy order.
func (e *SendError) Error() string {
	var b strings.Builder
	b.WriteString("firewall refused the send: ")
	if t := SendReasonText(e.Reason); t != "" {
		b.WriteString(t)
	} else {
		b.WriteString(e.Reason)
	}
	for _, f := range e.Feedback {
		b.WriteString("; next action: ")
		b.WriteString(f.NextAction)
		switch {
		case f.Rule != "" && f.Text != "":
			fmt.Fprintf(&b, " (%s: %s)", f.Rule, oneLine(f.Text))
		case f.Rule != "":
			fmt.Fprintf(&b, " (%s)", f.Rule)
		}
	}
	b.WriteString("; check ")
	b.WriteString(e.CheckID)
	return b.String()
}

// oneLine keeps a feedback text on the host's log line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// SendError returns the FirewallSendError of a refused outgoing check, or
// nil for any other check. Each deciding rule whose registered feedback
// the reason permits contributes its next action and text; the decision's
// own next action comes first when no rule's feedback names it, so every
// next action the decision implies is in the text.
func (e *Engine) SendError(c *Check) *SendError {
	d := c.Decision
	if c.Input.Direction != Outgoing || d.Disposition != DispositionRefused {
		return nil
	}
	decl := map[string]RuleDecl{}
	for _, mw := range e.outgoing {
		for _, r := range mw.Rules {
			if _, ok := decl[r.ID]; !ok {
				decl[r.ID] = r
			}
		}
	}
	se := &SendError{CheckID: c.CheckID, Reason: d.Reason, Feedback: []SendFeedback{}}
	named := false
	for _, dr := range d.DecidedBy {
		r := decl[dr.ID]
		if dr.Advice == "" || r.Feedback == nil {
			continue
		}
		se.Feedback = append(se.Feedback, SendFeedback{Rule: dr.ID, NextAction: r.Feedback.NextAction, Text: dr.Advice})
		if r.Feedback.NextAction == d.NextAction {
			named = true
		}
	}
	if !named && d.NextAction != "" {
		se.Feedback = append([]SendFeedback{{NextAction: d.NextAction}}, se.Feedback...)
	}
	return se
}
