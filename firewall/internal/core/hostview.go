package core

import (
	"fmt"
	"strings"
)

// Subject is a guidance subject reference: a runtime-visible message the
// guidance is about, with the quoted text and attribution of the same
// capture (the seed's "Incoming projection").
type Subject struct {
	Event         string `json:"event"`
	Sender        string `json:"sender"`
	AuthorAgentID string `json:"authorAgentId,omitempty"`
	PostID        string `json:"postId,omitempty"`
	Text          string `json:"text"`
}

// HostGuidance is the local guidance as the runtime reads it beside an
// admitted item: expectation, subject references, instructions. A
// judgment naming a subject the runtime was not shown makes its finding
// unavailable, as the daemon does (the finding names the subjects), and
// gives no advice here. Dropped lists subjects the viewer's own record of
// what the runtime was shown leaves out (a code rule's candidate, or a
// record the window holds but the viewer never saw admitted).
type HostGuidance struct {
	Expectation  string        `json:"expectation,omitempty"`
	Subjects     []Subject     `json:"subjects"`
	Instructions []Instruction `json:"instructions"`
	Dropped      []string      `json:"droppedSubjects,omitempty"`
}

// HostView is what the host saw of one check: a refused send's
// FirewallSendError, an admitted item's guidance, or nothing (withheld).
type HostView struct {
	CheckID     string        `json:"checkId"`
	Event       string        `json:"event"`
	Direction   string        `json:"direction"`
	Disposition string        `json:"disposition"`
	SendError   *SendError    `json:"sendError,omitempty"`
	Guidance    *HostGuidance `json:"guidance,omitempty"`
}

// HostViewer derives host views check by check, in evaluation order; it
// remembers which incoming messages the runtime was shown, since only
// those (and the incoming candidate) may be guidance subjects.
type HostViewer struct {
	eng   *Engine
	shown map[string]bool // incoming events admitted to the runtime
	// Timeline, when set, gives the engine of each check's installation
	// (by its configurationDigest), for checks evaluated over time.
	Timeline *Timeline
}

// engineFor returns the engine whose installation made c.
func (h *HostViewer) engineFor(c *Check) *Engine {
	if h.Timeline != nil && c.Input.ConfigurationDigest != h.eng.Revision() {
		for _, s := range h.Timeline.Steps {
			if s.engine != nil && s.engine.Revision() == c.Input.ConfigurationDigest {
				return s.engine
			}
		}
	}
	return h.eng
}

// NewHostViewer returns a viewer for the checks of e.
func NewHostViewer(e *Engine) *HostViewer {
	return &HostViewer{eng: e, shown: map[string]bool{}}
}

// View returns the host view of c and records whether the runtime was
// shown its message. Call it for every check, in order.
func (h *HostViewer) View(c *Check) *HostView {
	in := c.Input
	d := c.Decision
	v := &HostView{CheckID: c.CheckID, Event: in.Candidate.Event, Direction: in.Direction, Disposition: d.Disposition}
	if in.Direction == Outgoing {
		v.SendError = h.engineFor(c).SendError(c)
		if d.Guidance != nil && d.Disposition == DispositionAdmitted {
			// "the same instructions as incoming guidance, without subjects"
			v.Guidance = &HostGuidance{Subjects: []Subject{}, Instructions: d.Guidance.Instructions}
		}
		return v
	}
	if d.Disposition != DispositionAdmitted {
		return v
	}
	h.shown[in.Candidate.Event] = true
	if d.Guidance == nil {
		return v
	}
	g := &HostGuidance{Expectation: d.Guidance.Expectation, Subjects: []Subject{}, Instructions: d.Guidance.Instructions}
	byEvent := map[string]Candidate{in.Candidate.Event: in.Candidate}
	for _, r := range in.history {
		byEvent[r.Event] = r
	}
	seen := map[string]bool{}
	add := func(ev string) {
		if seen[ev] {
			return
		}
		seen[ev] = true
		r, inWindow := byEvent[ev]
		visible := inWindow && (ev == in.Candidate.Event || (r.Message.Direction == Incoming && h.shown[ev]))
		if !visible {
			g.Dropped = append(g.Dropped, ev)
			return
		}
		m := r.Message
		g.Subjects = append(g.Subjects, Subject{Event: ev, Sender: m.Sender, AuthorAgentID: m.AuthorAgentID, PostID: m.PostID, Text: m.Text})
	}
	english := map[string]bool{}
	for _, f := range d.Findings {
		if f.English {
			english[f.Rule] = true
		}
	}
	for _, ins := range g.Instructions {
		if !english[ins.Rule] {
			// a code rule's guidance is about the candidate itself
			add(in.Candidate.Event)
		}
	}
	for _, j := range c.Trace {
		// a judgment naming a missing subject made its finding unavailable
		// (missingSubjects): guidance mode admits without that advice
		if j.Stage == "expectation" && len(missingSubjects(in, j.Subjects)) == 0 {
			for _, s := range j.Subjects {
				add(s)
			}
		}
	}
	if len(g.Subjects) == 0 && len(g.Dropped) == 0 && g.Expectation != "" {
		add(in.Candidate.Event)
	}
	v.Guidance = g
	return v
}

// Line renders a host view as one line of text: the send error a host
// log would keep, the guidance beside a delivered item, or what the
// runtime was not shown.
func (v *HostView) Line() string {
	switch {
	case v.SendError != nil:
		return fmt.Sprintf("%s host: %s", v.Event, v.SendError.Error())
	case v.Direction == Incoming && v.Disposition != DispositionAdmitted:
		return fmt.Sprintf("%s host: not shown (%s under check %s)", v.Event, v.Disposition, v.CheckID)
	case v.Guidance == nil:
		if v.Direction == Outgoing {
			return fmt.Sprintf("%s host: sent", v.Event)
		}
		return fmt.Sprintf("%s host: delivered", v.Event)
	}
	g := v.Guidance
	var b strings.Builder
	fmt.Fprintf(&b, "%s host: guidance", v.Event)
	if g.Expectation != "" {
		fmt.Fprintf(&b, " expectation=%s", g.Expectation)
	}
	if v.Direction == Incoming {
		subs := []string{}
		for _, s := range g.Subjects {
			subs = append(subs, fmt.Sprintf("%s(%s %q)", s.Event, s.Sender, s.Text))
		}
		fmt.Fprintf(&b, " subjects=[%s]", strings.Join(subs, ", "))
	}
	rules := []string{}
	for _, ins := range g.Instructions {
		rules = append(rules, ins.Rule)
	}
	fmt.Fprintf(&b, " instructions=[%s]", strings.Join(rules, ","))
	if len(g.Dropped) > 0 {
		fmt.Fprintf(&b, " not-runtime-visible=[%s]", strings.Join(g.Dropped, ","))
	}
	return b.String()
}
