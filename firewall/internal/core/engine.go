package core

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
)

// Directions.
const (
	Incoming = "incoming"
	Outgoing = "outgoing"
)

// Decision reasons (the seed's prose names in kebab case).
const (
	ReasonProhibition        = "prohibition"
	ReasonUnavailable        = "unavailable-assessment"
	ReasonUnresolvedEvidence = "unresolved-evidence"
	ReasonNormViolation      = "norm-violation"
	ReasonApprovalRequired   = "approval-required"
	ReasonAdmission          = "admission"
)

// Causes.
const (
	CauseJudgment    = "judgment"
	CauseUncertain   = "uncertain"
	CauseUnavailable = "unavailable"
	CauseCode        = "code"
	CauseEndpoint    = "endpoint"
	CauseDefault     = "default"
)

// Dispositions.
const (
	DispositionAdmitted = "admitted"
	DispositionWithheld = "withheld" // incoming, not admitted
	DispositionRefused  = "refused"  // outgoing, not admitted
)

// Finding outcomes.
const (
	OutcomePass             = "pass"
	OutcomeNotApplicable    = "not-applicable"
	OutcomeProhibited       = "prohibited"
	OutcomeHold             = "hold"
	OutcomeViolation        = "violation"
	OutcomeApprovalRequired = "approval-required"
	OutcomeUnavailable      = "unavailable"
)

// MaxHistoryBytes is the bound on the retained history window's bytes;
// exceeding it is an explicit evidence gap.
const MaxHistoryBytes = 2 << 20

// PostRef is the post reference of a checked message.
type PostRef struct {
	AuthorAgentID string `json:"authorAgentId"`
	PostID        string `json:"postId"`
}

// Candidate is one captured message to check.
type Candidate struct {
	Event   string           `json:"event"` // event id in the log
	Message eventlog.Message `json:"message"`
	canon   []byte           // cached canonical JSON of Message
	ts      string           // the event's time (collective timing)
	cause   string           // the event it came from (proven runtime origin)
	pending []string         // sends whose intent was unresolved when it was read (evidence gaps)
}

// canonical returns the canonical JSON of the message, cached.
func (c *Candidate) canonical() ([]byte, error) {
	if c.canon != nil {
		return c.canon, nil
	}
	b, err := canon.Marshal(c.Message)
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", c.Event, err)
	}
	c.canon = b
	return b, nil
}

// Post returns the candidate's post reference, or nil (a gather, or an
// unknown post id).
func (c Candidate) Post() *PostRef { return postOf(c.Message) }

func postOf(m eventlog.Message) *PostRef {
	if m.PostID == "" || m.Operation == "gather" {
		return nil
	}
	author := m.AuthorAgentID
	if author == "" {
		author = m.Sender
	}
	return &PostRef{AuthorAgentID: author, PostID: m.PostID}
}

// CheckInput is the exact semantic input of a check; its canonical JSON's
// sha256 is the check reference.
type CheckInput struct {
	ConfigurationDigest   string      `json:"configurationDigest"`
	Direction             string      `json:"direction"`
	Candidate             Candidate   `json:"candidate"`
	LocalAgent            string      `json:"localAgent"`
	History               []string    `json:"history"`       // event ids of the earlier records, oldest first
	HistorySHA256         string      `json:"historySha256"` // sha256 of the canonical JSON array of those records
	EarlierHistoryOmitted bool        `json:"earlierHistoryOmitted"`
	EvidenceGaps          []string    `json:"evidenceGaps"`
	Facts                 []string    `json:"facts"`
	CapturedAt            string      `json:"capturedAt"`
	history               []Candidate // the records themselves (not serialized)
	candidateBytes        []byte      // canonical bytes of the candidate message
	historyDigest         string      // sha256 of the canonical JSON array of the history records
	historyBytes          int         // its length

	// HistoryMarks names the history entries that are not runtime-visible
	// (event id -> assessor | withheld); absent entries are runtime-visible.
	HistoryMarks map[string]string `json:"historyMarks,omitempty"`
}

// Finding is one rule's finding in one check.
type Finding struct {
	Middleware  string   `json:"middleware"`
	Rule        string   `json:"rule"`
	Kind        string   `json:"kind"`
	From        string   `json:"from"` // code | fixed | editable
	English     bool     `json:"english"`
	Stage       string   `json:"stage,omitempty"`
	Outcome     string   `json:"outcome"`
	Reason      string   `json:"reason,omitempty"` // e.g. "uncertain"
	Detail      string   `json:"detail,omitempty"`
	Expectation string   `json:"expectation,omitempty"` // required | permitted | wait | none
	Choice      string   `json:"choice,omitempty"`
	Probability *float64 `json:"probability,omitempty"`
}

// DecidingRule is one entry of decidedBy.
type DecidingRule struct {
	ID         string `json:"id"`
	From       string `json:"from"`
	Middleware string `json:"middleware"`
	Advice     string `json:"advice,omitempty"`
}

// Instruction is one piece of local guidance.
type Instruction struct {
	Rule        string   `json:"rule"`
	Text        string   `json:"text"`
	Choice      string   `json:"choice,omitempty"`
	Probability *float64 `json:"probability,omitempty"`
}

// Guidance is the local guidance a check attaches to an admitted message.
type Guidance struct {
	Expectation  string        `json:"expectation,omitempty"` // incoming: required | permitted | wait | none
	Instructions []Instruction `json:"instructions"`
}

// Decision is the composed judgment of a check and its applied disposition.
type Decision struct {
	Reason      string         `json:"reason"`
	DecidedBy   []DecidingRule `json:"decidedBy"`
	Cause       string         `json:"cause"`
	NextAction  string         `json:"nextAction,omitempty"`
	Findings    []Finding      `json:"findings"`
	Guidance    *Guidance      `json:"guidance"`
	Disposition string         `json:"disposition"`

	// CollectiveFailure is the collective failure a timing rule gave a
	// step whose check admitted it (deadline-passed, request-closed, ...).
	CollectiveFailure string `json:"collectiveFailure,omitempty"`
}

// Check is one evaluated candidate: its reference, input, decision and the
// provider trace.
type Check struct {
	CheckID  string     `json:"checkId"`
	Input    CheckInput `json:"input"`
	Decision Decision   `json:"decision"`
	Trace    []Judgment `json:"trace"`
	Errors   []string   `json:"providerErrors,omitempty"`
	// ElapsedMs is how long the check took, as the evidence recorded it
	// (Runner.Elapsed); 0 when unknown: re-evaluation has no clock.
	ElapsedMs float64 `json:"elapsedMs,omitempty"`
}

// Engine runs a policy's middleware chains over candidates.
type Engine struct {
	Policy     *Policy
	Provider   Provider
	LocalAgent string
	CapturedAt string
	revision   string
	incoming   []middlewareDef
	outgoing   []middlewareDef
}

// NewEngine prepares the chains of p. provider answers English questions
// (UnavailableProvider when nil).
func NewEngine(p *Policy, provider Provider, localAgent, capturedAt string) (*Engine, error) {
	if provider == nil {
		provider = UnavailableProvider{}
	}
	rev, err := p.ActiveRevision()
	if err != nil {
		return nil, err
	}
	e := &Engine{Policy: p, Provider: provider, LocalAgent: localAgent, CapturedAt: capturedAt, revision: rev}
	for _, m := range p.Incoming {
		e.incoming = append(e.incoming, builtinMiddleware(m, Incoming, p))
	}
	for _, m := range p.Outgoing {
		e.outgoing = append(e.outgoing, builtinMiddleware(m, Outgoing, p))
	}
	if en, ok := englishMiddleware(p); ok {
		en.Direction = Incoming
		e.incoming = append(e.incoming, en)
		out := en
		out.Direction = Outgoing
		e.outgoing = append(e.outgoing, out)
	}
	return e, nil
}

// Revision returns the installation's activeRevision.
func (e *Engine) Revision() string { return e.revision }

// Chain returns the installed middleware of a direction (ids and revisions).
func (e *Engine) Chain(direction string) []map[string]string {
	ms := e.incoming
	if direction == Outgoing {
		ms = e.outgoing
	}
	out := []map[string]string{}
	for _, m := range ms {
		out = append(out, map[string]string{"id": m.ID, "revision": m.Revision})
	}
	return out
}

// historyRecordBytes is the size we count for a retained record.
func historyRecordBytes(c Candidate) int {
	return len(c.Message.Text) + len(c.Message.Conversation) + len(c.Message.Sender) + 64
}

// BuildInput assembles the check input of candidate c with the earlier
// records of its conversation (oldest first, strictly earlier, already cut
// to at most maximumHistoryRecords), and whether older records were omitted.
func (e *Engine) BuildInput(c Candidate, earlier []Candidate, omitted bool) (CheckInput, error) {
	cb, err := c.canonical()
	if err != nil {
		return CheckInput{}, fmt.Errorf("candidate: %w", err)
	}
	in := CheckInput{
		ConfigurationDigest:   e.revision,
		Direction:             c.Message.Direction,
		Candidate:             c,
		LocalAgent:            e.LocalAgent,
		History:               []string{},
		EarlierHistoryOmitted: omitted,
		EvidenceGaps:          []string{},
		Facts:                 e.Policy.Facts,
		CapturedAt:            e.CapturedAt,
		history:               earlier,
		candidateBytes:        cb,
	}
	total := 0
	inputBytes := int64(len(cb))
	hd := sha256.New()
	hd.Write([]byte{'['})
	in.historyBytes = 2
	for i := range earlier {
		h := &earlier[i]
		hb, err := h.canonical()
		if err != nil {
			return CheckInput{}, fmt.Errorf("history record: %w", err)
		}
		if i > 0 {
			hd.Write([]byte{','})
			in.historyBytes++
		}
		hd.Write(hb)
		in.historyBytes += len(hb)
		total += historyRecordBytes(*h)
		inputBytes += int64(len(hb))
		in.History = append(in.History, h.Event)
	}
	hd.Write([]byte{']'})
	in.historyDigest = hex.EncodeToString(hd.Sum(nil))
	in.HistorySHA256 = in.historyDigest
	if total > MaxHistoryBytes {
		in.EvidenceGaps = append(in.EvidenceGaps, fmt.Sprintf("history window exceeds %d bytes", MaxHistoryBytes))
	}
	if max := e.Policy.Settings.MaximumInputBytes; inputBytes > max {
		in.EvidenceGaps = append(in.EvidenceGaps, fmt.Sprintf("check input of %d bytes exceeds maximumInputBytes %d", inputBytes, max))
	}
	return in, nil
}

// CheckID returns the check reference: "chk_" and the sha256 of the
// canonical check input.
func CheckID(in CheckInput) (string, error) {
	b, err := canon.Marshal(in)
	if err != nil {
		return "", err
	}
	return "chk_" + sha256Hex(b), nil
}

// Check runs the chain of the candidate's direction and composes the decision.
func (e *Engine) Check(in CheckInput) (*Check, error) {
	id, err := CheckID(in)
	if err != nil {
		return nil, fmt.Errorf("check reference of %s: %w", in.Candidate.Event, err)
	}
	chk := &Check{CheckID: id, Input: in, Trace: []Judgment{}}
	chain := e.incoming
	if in.Direction == Outgoing {
		chain = e.outgoing
	}
	var findings []Finding
	var decls []RuleDecl
	for _, mw := range chain {
		fs := e.runMiddleware(mw, in, chk)
		findings = append(findings, fs...)
		decls = append(decls, mw.Rules...)
	}
	if findings == nil {
		findings = []Finding{}
	}
	chk.Decision = e.compose(in, findings, decls)
	return chk, nil
}

func codeFinding(mw middlewareDef, r RuleDecl) Finding {
	return Finding{Middleware: mw.ID, Rule: r.ID, Kind: r.Kind, From: r.From, Outcome: OutcomePass}
}

func (e *Engine) runMiddleware(mw middlewareDef, in CheckInput, chk *Check) []Finding {
	msg := in.Candidate.Message
	var out []Finding
	codeRefused := false
	for _, r := range mw.Rules {
		if r.English {
			continue
		}
		f := codeFinding(mw, r)
		switch r.ID {
		case RuleAcknowledgement:
			f = e.acknowledgement(f, in)
		case RuleAllowedSender:
			allowed := false
			for _, a := range mw.Spec.AgentIDs {
				if a == msg.Sender {
					allowed = true
				}
			}
			if !allowed {
				f.Outcome = OutcomeProhibited
				if len(mw.Spec.AgentIDs) == 0 {
					f.Detail = "the allowed-senders list is empty: it admits none"
				} else {
					f.Detail = fmt.Sprintf("sender %q is not in agentIds", msg.Sender)
				}
			}
		case RuleCredentials:
			if d := credentialFinding(msg.Text); d != "" {
				f.Outcome, f.Detail = OutcomeViolation, d
			}
		case RulePlainLanguage:
			if d := plainLanguageFinding(msg.Text, mw.Spec); d != "" {
				f.Outcome, f.Detail = OutcomeViolation, d
			}
		case RuleFacilitatorStarts:
			if msg.Operation == "gather" || msg.Operation == "all_gather" {
				if msg.Sender != mw.Spec.Facilitator {
					f.Outcome, f.Detail = OutcomeViolation, fmt.Sprintf("%s started by %q, not the facilitator %q", msg.Operation, msg.Sender, mw.Spec.Facilitator)
				}
			} else {
				f.Outcome, f.Detail = OutcomeNotApplicable, "not a collective start"
			}
		case RuleOneOpenRequest:
			if msg.Operation == "gather" || msg.Operation == "all_gather" {
				if open := openRequest(in.history); open != "" {
					f.Outcome, f.Detail = OutcomeViolation, "request "+open+" is still open in this conversation"
				}
			} else {
				f.Outcome, f.Detail = OutcomeNotApplicable, "not a collective request"
			}
		case RuleNoAcknowledgementPosts:
			if IsEmptyAcknowledgement(msg.Text) {
				f.Outcome, f.Detail = OutcomeViolation, "the post is an empty acknowledgement"
			}
		}
		if f.Outcome == OutcomeViolation || f.Outcome == OutcomeProhibited {
			codeRefused = true
		}
		out = append(out, f)
	}
	var english []RuleDecl
	for _, r := range mw.Rules {
		if r.English {
			english = append(english, r)
		}
	}
	if len(english) > 0 {
		if mw.Use == UseCollectiveNorms && in.Direction == Outgoing && codeRefused {
			for _, r := range english {
				f := codeFinding(mw, r)
				f.English = true
				f.Outcome, f.Detail = OutcomeNotApplicable, "not assessed: a code rule refused the send"
				out = append(out, f)
			}
		} else {
			out = append(out, e.englishFindings(mw, english, in, chk)...)
		}
	}
	return out
}

// acknowledgement: an exact empty acknowledgement needs no response unless
// the agent's own later message asked its sender something.
func (e *Engine) acknowledgement(f Finding, in CheckInput) Finding {
	msg := in.Candidate.Message
	if in.Direction != Incoming {
		f.Outcome, f.Detail = OutcomeNotApplicable, "outgoing"
		return f
	}
	if !IsEmptyAcknowledgement(msg.Text) {
		f.Outcome, f.Detail = OutcomeNotApplicable, "not an empty acknowledgement"
		return f
	}
	// Look back for the agent's own last message in the conversation after
	// the sender's last earlier message.
	for i := len(in.history) - 1; i >= 0; i-- {
		h := in.history[i].Message
		if h.Sender == msg.Sender {
			break
		}
		if h.Sender == e.LocalAgent && h.Direction == Outgoing {
			if addressedTo(h, msg.Sender) && asksSomething(h.Text) {
				f.Outcome = OutcomeNotApplicable
				f.Detail = "the agent's own later message (" + in.history[i].Event + ") asked the sender something"
				return f
			}
		}
	}
	f.Outcome, f.Expectation, f.Detail = OutcomePass, "none", "an exact empty acknowledgement needs no response"
	return f
}

func addressedTo(m eventlog.Message, agent string) bool {
	if len(m.Recipients) == 0 {
		return true
	}
	for _, r := range m.Recipients {
		if r == agent {
			return true
		}
	}
	return false
}

// openRequest returns the event id of a collective request in history that
// is still open: a gather or all_gather for which not every recipient has
// posted an answer after it (with no recipients, any answer closes it).
func openRequest(history []Candidate) string {
	for i, h := range history {
		if h.Message.Operation != "gather" && h.Message.Operation != "all_gather" {
			continue
		}
		waiting := map[string]bool{}
		for _, r := range h.Message.Recipients {
			if r != h.Message.Sender {
				waiting[r] = true
			}
		}
		anyAnswer := false
		for _, later := range history[i+1:] {
			if later.Message.Operation == "answer" {
				anyAnswer = true
				delete(waiting, later.Message.Sender)
			}
		}
		if (len(h.Message.Recipients) == 0 && !anyAnswer) || (len(h.Message.Recipients) > 0 && len(waiting) > 0) {
			return h.Event
		}
	}
	return ""
}

// compose applies the seed's order: prohibition; required hold (unavailable
// assessment, then unresolved evidence); norm repair; missing approval;
// otherwise admission.
func (e *Engine) compose(in CheckInput, fs []Finding, decls []RuleDecl) Decision {
	declOf := map[string]RuleDecl{}
	for _, d := range decls {
		if _, ok := declOf[d.ID]; !ok {
			declOf[d.ID] = d
		}
	}
	pick := func(pred func(Finding) bool) []Finding {
		var out []Finding
		for _, f := range fs {
			if pred(f) {
				out = append(out, f)
			}
		}
		return out
	}
	prohibited := pick(func(f Finding) bool { return f.Outcome == OutcomeProhibited })
	unavailable := pick(func(f Finding) bool { return f.Outcome == OutcomeUnavailable })
	holds := pick(func(f Finding) bool { return f.Outcome == OutcomeHold })
	violations := pick(func(f Finding) bool { return f.Outcome == OutcomeViolation })
	approvals := pick(func(f Finding) bool { return f.Outcome == OutcomeApprovalRequired })
	uncertainNorms := pick(func(f Finding) bool {
		return f.Kind == KindNorm && f.Outcome == OutcomePass && f.Reason == "uncertain"
	})
	expectation, conflicting := combineExpectations(fs)
	if len(conflicting) > 0 {
		holds = append(holds, conflicting...)
	}

	d := Decision{Findings: fs, DecidedBy: []DecidingRule{}}
	var deciding []Finding
	switch {
	case len(prohibited) > 0:
		d.Reason, d.NextAction, deciding = ReasonProhibition, NextStop, prohibited
	case len(unavailable) > 0:
		d.Reason, d.NextAction, deciding = ReasonUnavailable, NextWait, unavailable
	case len(holds) > 0 || len(in.EvidenceGaps) > 0:
		d.Reason, d.NextAction, deciding = ReasonUnresolvedEvidence, NextWait, holds
	case len(violations) > 0:
		d.Reason, d.NextAction, deciding = ReasonNormViolation, NextRevise, violations
	case len(approvals) > 0:
		d.Reason, d.NextAction, deciding = ReasonApprovalRequired, NextSeekApproval, approvals
	default:
		d.Reason, deciding = ReasonAdmission, uncertainNorms
	}
	// decidedBy: each deciding rule once, in chain order (findings are in
	// chain order already).
	seen := map[string]bool{}
	var first, firstEnglish *Finding
	for i := range deciding {
		f := deciding[i]
		key := f.Middleware + "\x00" + f.Rule
		if seen[key] {
			continue
		}
		seen[key] = true
		if first == nil {
			first = &deciding[i]
		}
		if f.English && firstEnglish == nil {
			firstEnglish = &deciding[i]
		}
		dr := DecidingRule{ID: f.Rule, From: f.From, Middleware: f.Middleware}
		decl := declOf[f.Rule]
		if d.Reason == ReasonAdmission {
			dr.Advice = decl.Guidance
		} else if decl.Feedback != nil && permits(d.Reason, decl.Feedback.NextAction) {
			dr.Advice = decl.Feedback.Text
		}
		d.DecidedBy = append(d.DecidedBy, dr)
	}
	if d.Reason == ReasonNormViolation && first != nil {
		if decl := declOf[first.Rule]; decl.Feedback != nil {
			d.NextAction = decl.Feedback.NextAction
		}
	}
	switch {
	case firstEnglish != nil:
		switch {
		case firstEnglish.Outcome == OutcomeUnavailable:
			d.Cause = CauseUnavailable
		case firstEnglish.Reason == "uncertain":
			d.Cause = CauseUncertain
		default:
			d.Cause = CauseJudgment
		}
	case first != nil:
		d.Cause = CauseCode
		if first.Outcome == OutcomeUnavailable {
			d.Cause = CauseUnavailable
		}
	case d.Reason == ReasonAdmission:
		d.Cause = CauseDefault
	default:
		d.Cause = CauseEndpoint
	}

	// disposition and guidance
	admitted := d.Reason == ReasonAdmission || e.Policy.Mode == ModeGuidance
	if admitted {
		d.Disposition = DispositionAdmitted
		d.Guidance = e.guidance(in, d, fs, declOf, expectation)
	} else if in.Direction == Outgoing {
		d.Disposition = DispositionRefused
	} else {
		d.Disposition = DispositionWithheld
	}
	return d
}

func permits(reason, next string) bool {
	switch reason {
	case ReasonProhibition:
		return next == NextStop
	case ReasonUnavailable, ReasonUnresolvedEvidence:
		return next == NextWait || next == NextStop
	case ReasonNormViolation:
		return next == NextRevise || next == NextWait || next == NextStop
	case ReasonApprovalRequired:
		return next == NextSeekApproval
	}
	return false
}

// combineExpectations merges the settled response expectations; "required"
// conflicts with "wait" or "none" (the conflicting findings are returned).
func combineExpectations(fs []Finding) (string, []Finding) {
	var req, quiet []Finding
	present := map[string]bool{}
	for _, f := range fs {
		if f.Expectation == "" || f.Reason == "uncertain" {
			continue
		}
		present[f.Expectation] = true
		switch f.Expectation {
		case "required":
			req = append(req, f)
		case "wait", "none":
			quiet = append(quiet, f)
		}
	}
	if len(req) > 0 && len(quiet) > 0 {
		var c []Finding
		for _, f := range fs {
			if f.Expectation == "required" || f.Expectation == "wait" || f.Expectation == "none" {
				if f.Reason != "uncertain" {
					c = append(c, f)
				}
			}
		}
		return "", c
	}
	for _, x := range []string{"required", "wait", "permitted", "none"} {
		if present[x] {
			return x, nil
		}
	}
	return "", nil
}

func (e *Engine) guidance(in CheckInput, d Decision, fs []Finding, declOf map[string]RuleDecl, expectation string) *Guidance {
	g := &Guidance{Instructions: []Instruction{}}
	if in.Direction == Incoming {
		g.Expectation = expectation
	}
	seen := map[string]bool{}
	add := func(ins Instruction) {
		k := ins.Rule + "\x00" + ins.Text + "\x00" + ins.Choice
		if ins.Text == "" || seen[k] {
			return
		}
		seen[k] = true
		g.Instructions = append(g.Instructions, ins)
	}
	for _, f := range fs {
		decl := declOf[f.Rule]
		switch {
		case f.Kind == KindNorm && f.Reason == "uncertain" && f.Outcome == OutcomePass:
			add(Instruction{Rule: f.Rule, Text: decl.Guidance, Choice: f.Choice, Probability: f.Probability})
		case in.Direction == Incoming && f.Expectation != "" && f.Reason != "uncertain":
			// settled incoming expectations become guidance; settled outgoing
			// expectations are not returned (conformance assessed them).
			add(Instruction{Rule: f.Rule, Text: decl.Guidance})
		}
	}
	if d.Reason != ReasonAdmission {
		// guidance mode: admit with the advice of the deciding rules
		for _, dr := range d.DecidedBy {
			text := dr.Advice
			if text == "" {
				text = declOf[dr.ID].Guidance
			}
			add(Instruction{Rule: dr.ID, Text: text})
		}
	}
	if g.Expectation == "" && len(g.Instructions) == 0 {
		return nil
	}
	return g
}

// ---- English middleware ----

func prob(p float64) *float64 { return &p }

func (e *Engine) englishFindings(mw middlewareDef, rules []RuleDecl, in CheckInput, chk *Check) []Finding {
	var out []Finding
	minP := e.Policy.EnglishSettings.MinimumProbability
	for _, r := range rules {
		base := Finding{Middleware: mw.ID, Rule: r.ID, Kind: r.Kind, From: r.From, English: true}
		stages := []struct {
			name    string
			options []string
		}{{"applicability", []string{"applies", "not-applicable", "unresolved"}}}
		switch r.Kind {
		case KindSafety:
			stages = append(stages, struct {
				name    string
				options []string
			}{"safety", []string{"compliant", "prohibited", "unresolved"}})
		case KindAutonomy:
			stages = append(stages, struct {
				name    string
				options []string
			}{"autonomy", []string{"autonomous", "approval-required", "prohibited", "unresolved"}})
		case KindNorm:
			stages = append(stages, struct {
				name    string
				options []string
			}{"expectation", []string{"required", "permitted", "wait", "none", "unresolved"}})
			if in.Direction == Outgoing {
				stages = append(stages, struct {
					name    string
					options []string
				}{"conformance", []string{"conforms", "violates", "unresolved"}})
			}
		}
		expectationUncertain := false
		for _, st := range stages {
			f := base
			f.Stage = st.name
			if st.name == "conformance" && expectationUncertain {
				f.Outcome, f.Detail = OutcomeNotApplicable, "expectation uncertain: left out of conformance"
				out = append(out, f)
				continue
			}
			q, err := e.question(st.name, st.options, r, in)
			if err != nil {
				f.Outcome, f.Detail = OutcomeUnavailable, err.Error()
				out = append(out, f)
				continue
			}
			if int64(q.Size) > e.Policy.EnglishSettings.MaximumRequestBytes {
				f.Outcome, f.Detail = OutcomeUnavailable, fmt.Sprintf("request of %d bytes exceeds maximumRequestBytes %d", q.Size, e.Policy.EnglishSettings.MaximumRequestBytes)
				out = append(out, f)
				continue
			}
			j, err := e.Provider.Decide(q)
			if err == nil {
				j.Key, j.Stage, j.Rule = q.Key, q.Stage, q.Rule
				err = validateJudgment(q, j)
			}
			if err != nil {
				f.Outcome, f.Detail = OutcomeUnavailable, err.Error()
				if fe, ok := failureEntry(q, err); ok {
					chk.Trace = append(chk.Trace, fe) // a typed failure stays in the trace
				}
				if !errors.Is(err, ErrUnavailable) {
					chk.Errors = append(chk.Errors, err.Error())
				}
				out = append(out, f)
				continue
			}
			chk.Trace = append(chk.Trace, j)
			f.Choice, f.Probability = j.Choice, prob(j.Probability)
			if missing := missingSubjects(in, j.Subjects); len(missing) > 0 {
				// "Missing subjects ... produces an unavailable check;
				// guidance mode admits without that advice."
				f.Outcome, f.Detail = OutcomeUnavailable, "missing guidance subjects (not runtime-visible in this check's capture): "+strings.Join(missing, ",")
				out = append(out, f)
				continue
			}
			unc := Uncertain(j, minP)
			if unc {
				if r.Kind == KindNorm {
					f.Outcome, f.Reason = OutcomePass, "uncertain"
					if st.name == "expectation" {
						expectationUncertain = true
					}
				} else {
					f.Outcome, f.Reason = OutcomeHold, "uncertain"
				}
				out = append(out, f)
				continue
			}
			switch st.name {
			case "applicability":
				f.Outcome = OutcomePass
				if j.Choice == "not-applicable" {
					f.Outcome = OutcomeNotApplicable
				}
			case "safety":
				f.Outcome = OutcomePass
				if j.Choice == "prohibited" {
					f.Outcome = OutcomeProhibited
				}
			case "autonomy":
				switch j.Choice {
				case "prohibited":
					f.Outcome = OutcomeProhibited
				case "approval-required":
					f.Outcome = OutcomeApprovalRequired // approval evidence is always absent
				default:
					f.Outcome = OutcomePass
				}
			case "expectation":
				f.Outcome, f.Expectation = OutcomePass, j.Choice
			case "conformance":
				f.Outcome = OutcomePass
				if j.Choice == "violates" {
					f.Outcome = OutcomeViolation
				}
			}
			out = append(out, f)
		}
	}
	return out
}

// question builds the named question for rule r at a stage. Its key is the
// sha256 of the canonical request: edition, stage, options, rule, the
// candidate (without the draft's text for outgoing expectations), the
// history references, facts and the local agent.
func (e *Engine) question(stage string, options []string, r RuleDecl, in CheckInput) (Question, error) {
	cand := in.Candidate.Message
	if in.Direction == Outgoing && stage == "expectation" {
		cand.Text = ""
		cand.PostID = ""
	}
	req := map[string]any{
		"edition":               QuestionEdition,
		"stage":                 stage,
		"options":               options,
		"rule":                  map[string]string{"id": r.ID, "kind": r.Kind, "text": r.Text},
		"direction":             in.Direction,
		"candidate":             cand,
		"history":               map[string]any{"records": len(in.history), "sha256": in.historyDigest},
		"earlierHistoryOmitted": in.EarlierHistoryOmitted,
		"facts":                 in.Facts,
		"localAgent":            in.LocalAgent,
	}
	if len(in.HistoryMarks) > 0 {
		req["historyMarks"] = in.HistoryMarks
	}
	b, err := canon.Marshal(req)
	if err != nil {
		return Question{}, fmt.Errorf("question %s of %s: %w", stage, r.ID, err)
	}
	return Question{Key: sha256Hex(b), Stage: stage, Rule: r.ID, Options: options, Request: b, Size: len(b) + in.historyBytes}, nil
}

// missingSubjects returns the subject references of a judgment that the
// check's capture cannot quote: guidance subjects are restricted to
// admitted runtime history (a history record without a mark) and the
// incoming candidate, so an assessor-only or withheld record, a later
// event, or one outside the window is missing.
func missingSubjects(in CheckInput, subjects []string) []string {
	var missing []string
	for _, s := range subjects {
		if s == in.Candidate.Event && in.Direction == Incoming {
			continue
		}
		visible := false
		for _, h := range in.History {
			if h == s {
				visible = in.HistoryMarks[s] == "" || in.HistoryMarks[s] == VisibleRuntime
				break
			}
		}
		if !visible {
			missing = append(missing, s)
		}
	}
	return missing
}
