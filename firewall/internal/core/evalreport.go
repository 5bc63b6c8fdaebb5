package core

import (
	"fmt"
	"io"
)

// EvalReport writes what `witness firewall evaluate` prints: one line of
// text (or one JSON object, kept until the end) per check as the
// evaluation runs (Each), then the totals, the policy history and the
// audit snapshot written (Finish).
type EvalReport struct {
	w      io.Writer
	json   bool
	hv     *HostViewer // nil without the host view
	checks []evalCheckJSON
}

// evalCheckJSON is one check in evaluate's JSON output. The fields are in
// the order of their JSON names, the order the output has always had.
type evalCheckJSON struct {
	Cause             string         `json:"cause"`                       // the decision's cause
	CheckID           string         `json:"checkId"`                     // the check reference (chk_...)
	CollectiveFailure string         `json:"collectiveFailure,omitempty"` // a timing rule's failure, when one applied
	DecidedBy         []DecidingRule `json:"decidedBy"`                   // the rules that decided
	Direction         string         `json:"direction"`                   // incoming or outgoing
	Disposition       string         `json:"disposition"`                 // what the check did with the message
	ElapsedMs         float64        `json:"elapsedMs,omitempty"`         // the recorded duration, when known
	Event             string         `json:"event"`                       // the message's event id
	Guidance          *Guidance      `json:"guidance"`                    // the guidance given, or null
	Host              *HostView      `json:"host,omitempty"`              // what the host saw (--host-view)
	NextAction        string         `json:"nextAction"`                  // the next action, or ""
	Operation         string         `json:"operation"`                   // the message's operation
	Reason            string         `json:"reason"`                      // the decision's reason
}

// evalResultJSON is evaluate's JSON output, in the order of its names.
type evalResultJSON struct {
	Audit   string          `json:"audit"`             // the audit snapshot written, or ""
	Checks  []evalCheckJSON `json:"checks"`            // every check, in evaluation order
	History *Timeline       `json:"history,omitempty"` // the policy history (--activations)
	Summary *Summary        `json:"summary"`           // the totals
}

// NewEvalReport returns a report written to w in format ("text" or
// "json"). With hostView it also gives, after each check, what the host
// saw of it, under the installations of tl (nil: p's alone).
func NewEvalReport(w io.Writer, format string, p *Policy, tl *Timeline, hostView bool) (*EvalReport, error) {
	r := &EvalReport{w: w, json: format == "json", checks: []evalCheckJSON{}}
	if hostView {
		eng, err := NewEngine(p, nil, "", "")
		if err != nil {
			return nil, err
		}
		r.hv = NewHostViewer(eng)
		r.hv.Timeline = tl
	}
	return r, nil
}

// Each reports one check; it is an EvaluateOptions.Each.
func (r *EvalReport) Each(c *Check) error {
	var view *HostView
	if r.hv != nil {
		view = r.hv.View(c)
	}
	if r.json {
		d := c.Decision
		r.checks = append(r.checks, evalCheckJSON{CheckID: c.CheckID, Event: c.Input.Candidate.Event,
			Direction: c.Input.Direction, Operation: c.Input.Candidate.Message.Operation,
			Disposition: d.Disposition, Reason: d.Reason, DecidedBy: d.DecidedBy, Cause: d.Cause,
			NextAction: d.NextAction, Guidance: d.Guidance, Host: view,
			CollectiveFailure: d.CollectiveFailure, ElapsedMs: c.ElapsedMs})
		return nil
	}
	if _, err := fmt.Fprintln(r.w, CheckLine(c)); err != nil || view == nil {
		return err
	}
	_, err := fmt.Fprintln(r.w, view.Line())
	return err
}

// Finish writes the end of the report: the totals sum of the evaluation
// run with opts, its policy history, and audit, the snapshot it wrote
// ("" for none) with the key that signed it.
func (r *EvalReport) Finish(sum *Summary, opts EvaluateOptions, audit string) error {
	if r.json {
		return WriteJSONLine(r.w, evalResultJSON{Audit: audit, Checks: r.checks, History: opts.Timeline, Summary: sum})
	}
	if err := WriteSummary(r.w, sum); err != nil {
		return err
	}
	if opts.Timeline != nil {
		if err := WriteTimeline(r.w, opts.Timeline, opts.Timeline.Findings); err != nil {
			return err
		}
	}
	if audit == "" {
		return nil
	}
	signed := ""
	if len(opts.Signers) > 0 {
		signed = fmt.Sprintf(" (signed by key %s, %s)", opts.Signers[0].KeyID(), opts.Signers[0].Algorithm())
	}
	_, err := fmt.Fprintf(r.w, "audit: %s%s\n", audit, signed)
	return err
}
