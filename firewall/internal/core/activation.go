package core

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// This file replays policy edits over time (the seed's "Editable English
// policy"): activation records (policy_update's activation time,
// activeRevision, addedRuleIds, removedRuleIds) and policy_read lists
// (the fixed and editable rules of one revision) rebuild the installation
// active at each moment, so each check is re-evaluated under the
// installation that was active when it was captured.

// Activation is one policy activation record.
type Activation struct {
	Sequence       int      `json:"sequence"`
	ActivatedAt    int64    `json:"activatedAt"` // Unix milliseconds
	ActiveRevision string   `json:"activeRevision"`
	AddedRuleIDs   []string `json:"addedRuleIds"`
	RemovedRuleIDs []string `json:"removedRuleIds"`
	Source         string   `json:"source"` // file:line of the record
}

// FixedRule is one fixed rule as policy_read lists it: from "code" (a
// code middleware's rule, no text) or "english" (a fixed English rule).
type FixedRule struct {
	From       string    `json:"from"`
	Middleware string    `json:"middleware,omitempty"`
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Text       string    `json:"text,omitempty"`
	Guidance   string    `json:"guidance,omitempty"`
	Feedback   *Feedback `json:"feedback,omitempty"`
}

// PolicyRead is one policy_read result: the revision it was read under,
// the fixed rules and the editable English document.
type PolicyRead struct {
	Source         string        `json:"source"`
	ActiveRevision string        `json:"activeRevision"`
	FixedRules     []FixedRule   `json:"fixedRules"`
	Rules          []EnglishRule `json:"rules"`
}

const policyReadHint = "see docs/formats/firewall.md (Policy over time) for the policy_read list"
const activationsHint = "see docs/formats/firewall.md (Policy over time) for activation histories"

// LoadPolicyRead reads a policy_read list (a configuration input: errors
// are usage errors naming file, line, column and field).
func LoadPolicyRead(path string) (*PolicyRead, error) {
	data, err := readConfig(path, "policy_read list", "check the path given to --policy-read", MaxPolicyBytes)
	if err != nil {
		return nil, err
	}
	return DecodePolicyRead(data, path)
}

// DecodePolicyRead decodes a policy_read result:
//
//	{"activeRevision": HEX64, "fixedRules": [FixedRule...], "rules": [EnglishRule...]}
//
// strictly (no unknown property at any depth, ids unique, at most 256
// editable rules, no editable id equal to a fixed id).
func DecodePolicyRead(data []byte, name string) (*PolicyRead, error) {
	if len(data) > MaxPolicyBytes {
		return nil, exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Msg: fmt.Sprintf("document exceeds %d bytes (1 MiB)", MaxPolicyBytes)}, policyReadHint)
	}
	root, err := parseConfigTree(data, name, policyReadHint)
	if err != nil {
		return nil, err
	}
	d := &policyDecoder{data: data, name: name}
	pr := &PolicyRead{Source: name, FixedRules: []FixedRule{}, Rules: []EnglishRule{}}
	if d.object(root, "$", "activeRevision", "fixedRules", "rules") {
		for _, req := range []string{"activeRevision", "rules"} {
			if _, ok := root.Lookup(req); !ok {
				d.fail(root, "$."+req, "required property is missing")
			}
		}
		if d.err == nil {
			pr.ActiveRevision = d.str(root.Get("activeRevision"), "$.activeRevision", true)
			if d.err == nil && !isLowerHex64(pr.ActiveRevision) {
				d.fail(root.Get("activeRevision"), "$.activeRevision", "must be 64 lowercase hex characters")
			}
		}
		if v, ok := root.Lookup("fixedRules"); ok && d.err == nil {
			pr.FixedRules = d.fixedRules(v, "$.fixedRules")
		}
		if d.err == nil {
			pr.Rules = d.rules(root.Get("rules"), "$.rules")
			if len(pr.Rules) > MaxEditableRules {
				d.fail(root.Get("rules"), "$.rules", "%d rules exceed the editable document's limit of %d", len(pr.Rules), MaxEditableRules)
			}
		}
		if d.err == nil {
			fixed := map[string]bool{}
			for _, f := range pr.FixedRules {
				fixed[f.ID] = true
			}
			seen := map[string]bool{}
			for i, r := range pr.Rules {
				p := fmt.Sprintf("$.rules[%d].id", i)
				switch {
				case seen[r.ID]:
					d.fail(root.Get("rules").Arr[i], p, "editable rule id %q appears twice", r.ID)
				case fixed[r.ID]:
					d.fail(root.Get("rules").Arr[i], p, "editable rule id %q is a fixed rule id (fixed-rule)", r.ID)
				}
				seen[r.ID] = true
			}
		}
	}
	if d.err != nil {
		return nil, exitcode.New(exitcode.Usage, d.err, policyReadHint)
	}
	return pr, nil
}

// fixedRules decodes policy_read's fixed rules; an id declared more than
// once is listed once ("at its first declaration"), so a repeat is refused.
func (d *policyDecoder) fixedRules(n *jsontree.Value, path string) []FixedRule {
	out := []FixedRule{}
	if n.Kind != jsontree.Array {
		d.fail(n, path, "expected an array of fixed rules, got %s", n.Kind.String())
		return out
	}
	seen := map[string]bool{}
	for i, it := range n.Arr {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if it.Kind != jsontree.Object {
			d.fail(it, ip, "expected an object, got %s", it.Kind.String())
			return out
		}
		from := ""
		if v, ok := it.Lookup("from"); ok {
			from = d.str(v, ip+".from", true)
		} else {
			d.fail(it, ip+".from", "required property is missing")
		}
		if d.err != nil {
			return out
		}
		var r FixedRule
		r.From = from
		switch from {
		case "code":
			if !d.object(it, ip, "from", "middleware", "id", "kind", "guidance", "feedback") {
				return out
			}
			if v, ok := it.Lookup("middleware"); ok {
				r.Middleware = d.str(v, ip+".middleware", true)
			} else {
				d.fail(it, ip+".middleware", "required property is missing")
			}
		case "english":
			if !d.object(it, ip, "from", "id", "kind", "text", "guidance", "feedback") {
				return out
			}
		default:
			d.fail(it.Get("from"), ip+".from", "unknown rule origin %q (want code or english)", from)
			return out
		}
		// the shared rule fields, through the English rule reader
		clone := &jsontree.Value{Kind: jsontree.Object, Line: it.Line, Col: it.Col}
		for _, m := range it.Obj {
			if m.Key != "from" && m.Key != "middleware" {
				clone.Obj = append(clone.Obj, m)
			}
		}
		_, hasGuidance := it.Lookup("guidance")
		if from == "code" {
			// code rules have no English text, and a code norm's guidance is
			// optional: give the English rule reader placeholders
			clone.Obj = append(clone.Obj, jsontree.Member{Key: "text", Val: &jsontree.Value{Kind: jsontree.String, Str: "code"}})
			if !hasGuidance {
				clone.Obj = append(clone.Obj, jsontree.Member{Key: "guidance", Val: &jsontree.Value{Kind: jsontree.String, Str: "code"}})
			}
			if _, ok := it.Lookup("text"); ok {
				d.fail(it.Get("text"), ip+".text", "a code rule has no English text")
			}
		}
		rs := d.rules(&jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{clone}, Line: n.Line, Col: n.Col}, path)
		if d.err != nil {
			d.err.Field = strings.Replace(d.err.Field, path+"[0]", ip, 1)
		}
		if d.err != nil || len(rs) != 1 {
			return out
		}
		if !hasGuidance {
			rs[0].Guidance = ""
		}
		r.ID, r.Kind, r.Guidance, r.Feedback = rs[0].ID, rs[0].Kind, rs[0].Guidance, rs[0].Feedback
		if from == "english" {
			r.Text = rs[0].Text
		}
		if seen[r.ID] {
			d.fail(it, ip+".id", "fixed rule id %q is listed twice (policy_read lists each once)", r.ID)
			return out
		}
		seen[r.ID] = true
		out = append(out, r)
	}
	return out
}

// LoadActivations reads an activation history: an audit snapshot (its
// activation records; the snapshot must be complete and untampered), or
// a JSON document with an "activations" array (the decisions feed's
// parallel array; its other members are not read).
func LoadActivations(path string) ([]Activation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read activations", err, "check the path given to --activations")
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(4096)
	if isAuditSnapshot(head) {
		v, err := VerifyAudit(br, path, nil)
		if err != nil {
			return nil, err
		}
		if err := v.Err(); err != nil {
			return nil, exitcode.New(exitcode.Of(err), fmt.Errorf("activations: %w", err), "activations are read only from a complete, untampered snapshot; run 'witness firewall audit verify' on it")
		}
		return auditActivations(path)
	}
	data, err := io.ReadAll(io.LimitReader(br, MaxPolicyBytes*16+1))
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read activations %s: %w", path, err), "")
	}
	return DecodeActivations(data, path)
}

// isAuditSnapshot says whether a file starts with an audit start record.
func isAuditSnapshot(head []byte) bool {
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	return bytes.Contains(first, []byte(`"type":"start"`)) && bytes.Contains(first, []byte(AuditFormat))
}

// auditActivations returns the activation records of a snapshot the
// caller has verified complete, in file order, read by the one audit
// line reader.
func auditActivations(path string) ([]Activation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path of the audit snapshot")
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var acts []Activation
	var lineNo int64
	for {
		line, _, tooLong, err := readAuditLine(br)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read audit %s: %w", path, err), "")
		}
		if line == nil && !tooLong {
			return acts, nil
		}
		lineNo++
		if tooLong || !bytes.Contains(line, []byte(`"activation"`)) {
			continue
		}
		tree, err := parseAuditLine(line, path, lineNo)
		if err != nil {
			return nil, exitcode.New(exitcode.Incomplete, err, "run 'witness firewall audit verify' on the snapshot")
		}
		l := AuditLine{File: path, No: lineNo, Raw: line, Tree: tree}
		var perr error
		rd := l.Reader(&perr)
		if rd.String("type", false) != RecordActivation {
			continue
		}
		acts = append(acts, readActivation(rd, fmt.Sprintf("%s:%d", path, lineNo)))
		if perr != nil {
			return nil, exitcode.New(exitcode.Tampered, l.Err(perr), activationsHint)
		}
	}
}

func readActivation(rd *jsontree.ObjectReader, source string) Activation {
	a := Activation{Source: source}
	a.Sequence = int(rd.Int("sequence", false))
	a.ActivatedAt = rd.Int("activatedAt", true)
	a.ActiveRevision = rd.String("activeRevision", true)
	a.AddedRuleIDs = rd.Strings("addedRuleIds", true)
	a.RemovedRuleIDs = rd.Strings("removedRuleIds", true)
	if a.ActiveRevision != "" && !isLowerHex64(a.ActiveRevision) {
		rd.Fail("activeRevision", "must be 64 lowercase hex characters")
	}
	if a.AddedRuleIDs == nil {
		a.AddedRuleIDs = []string{}
	}
	if a.RemovedRuleIDs == nil {
		a.RemovedRuleIDs = []string{}
	}
	return a
}

// DecodeActivations decodes {"activations": [ActivationRecord...]}: each
// record with activatedAt (Unix ms), activeRevision (64 lowercase hex),
// addedRuleIds and removedRuleIds; sequence and type ("activation") are
// optional; any other member of a record is refused.
func DecodeActivations(data []byte, name string) ([]Activation, error) {
	root, err := parseConfigTree(data, name, activationsHint)
	if err != nil {
		// an activation history is evidence: malformed is invalid (3)
		return nil, exitcode.New(exitcode.Tampered, err, activationsHint)
	}
	var perr error
	rd := jsontree.NewObjectReader(name, "", root, &perr)
	if root.Kind != jsontree.Object {
		return nil, exitcode.New(exitcode.Tampered, &jsontree.Error{File: name, Line: int64(root.Line), Col: root.Col, Field: "$", Msg: "expected an object with an \"activations\" array"}, activationsHint)
	}
	var acts []Activation
	rd.Objects("activations", true, func(i int, el *jsontree.ObjectReader) {
		if t, ok := el.OptString("type"); ok && t != RecordActivation {
			el.Fail("type", fmt.Sprintf("want %q, got %q", RecordActivation, t))
		}
		acts = append(acts, readActivation(el, fmt.Sprintf("%s:$.activations[%d]", name, i)))
		el.Done()
	})
	if perr != nil {
		return nil, exitcode.New(exitcode.Tampered, perr, activationsHint)
	}
	for i := range acts {
		if acts[i].Sequence == 0 {
			acts[i].Sequence = i + 1
		}
	}
	return acts, nil
}

// History finding kinds.
const (
	FindingDuplicateSequence     = "duplicate-sequence"
	FindingOutOfOrderTime        = "out-of-order-time"
	FindingRuleAddedTwice        = "rule-added-twice"
	FindingUnknownRuleRemoved    = "unknown-rule-removed"
	FindingFixedRuleEdited       = "fixed-rule-edited"
	FindingRevisionReused        = "revision-names-two-installations"
	FindingRuleTextUnknown       = "rule-text-unknown"
	FindingPolicyReadDisagrees   = "policy-read-disagrees"
	FindingPolicyReadNotActive   = "policy-read-never-activated"
	FindingRevisionNeverActive   = "revision-never-activated"
	FindingRevisionNotAtCapture  = "revision-not-active-at-capture"
	FindingCapturedBeforeHistory = "captured-before-any-activation"
	FindingNoCaptureTime         = "no-capture-time"
	FindingInstallationUnknown   = "installation-unknown"
)

// HistoryFinding is one inconsistency of a policy history, or between a
// check and the history.
type HistoryFinding struct {
	Kind   string `json:"kind"`
	Where  string `json:"where"`
	Detail string `json:"detail"`
}

func (f HistoryFinding) String() string {
	return fmt.Sprintf("%s: %s: %s", f.Where, f.Kind, f.Detail)
}

// Installation is one step of a policy history: an activation and the
// editable document it made active (Known false when a rule's text is not
// in any policy_read list, so the installation cannot be rebuilt).
type Installation struct {
	Activation Activation    `json:"activation"`
	RuleIDs    []string      `json:"ruleIds"`
	Known      bool          `json:"known"`
	Rules      []EnglishRule `json:"-"`
	Policy     *Policy       `json:"-"`
	engine     *Engine
}

// Timeline is a policy history in activation sequence order.
type Timeline struct {
	Steps    []*Installation  `json:"steps"`
	Findings []HistoryFinding `json:"findings"`
}

// BuildTimeline replays the activations over the base policy (its fixed
// rules, chains and settings; its initialRules only as a source of rule
// text), starting from an empty editable document, taking each added
// rule's text from the policy_read list of the same revision, else from
// the lists that agree on it, else from the base policy's initialRules.
// Every inconsistency is a finding; nothing is guessed.
func BuildTimeline(base *Policy, acts []Activation, reads []*PolicyRead) *Timeline {
	tl := &Timeline{Steps: []*Installation{}, Findings: []HistoryFinding{}}
	if base == nil {
		// no policy file: revisions and rule ids only, nothing to rebuild
		base = &Policy{}
		defer func() {
			for _, s := range tl.Steps {
				s.Known, s.Policy = false, nil
			}
		}()
	}
	ordered := append([]Activation{}, acts...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Sequence < ordered[j].Sequence })
	tb := &timelineBuilder{tl: tl, base: base, reads: reads, fixed: fixedRuleIDs(base),
		doc: []EnglishRule{}, known: true, bySeq: map[int]string{}, byRev: map[string]*Installation{}}
	for i, a := range ordered {
		if prev, dup := tb.bySeq[a.Sequence]; dup {
			tb.find(FindingDuplicateSequence, a.Source, "sequence %d is also the sequence of %s", a.Sequence, prev)
		}
		tb.bySeq[a.Sequence] = a.Source
		if i > 0 && a.ActivatedAt < ordered[i-1].ActivatedAt {
			tb.find(FindingOutOfOrderTime, a.Source, "activation %d at %s is earlier than activation %d at %s; updates are serialized, so the sequence order is kept and checks are placed by it",
				a.Sequence, msTime(a.ActivatedAt), ordered[i-1].Sequence, msTime(ordered[i-1].ActivatedAt))
		}
		tb.install(a)
	}
	tb.checkReads()
	return tl
}

// timelineBuilder is the state of BuildTimeline: the editable document as
// the activations so far leave it.
type timelineBuilder struct {
	tl    *Timeline
	base  *Policy
	reads []*PolicyRead
	fixed map[string]bool // the fixed rules' ids and the built-in middleware's
	doc   []EnglishRule
	known bool // every rule text of doc is known
	bySeq map[int]string
	byRev map[string]*Installation
}

func (tb *timelineBuilder) find(kind, where, format string, args ...any) {
	tb.tl.Findings = append(tb.tl.Findings, HistoryFinding{Kind: kind, Where: where, Detail: fmt.Sprintf(format, args...)})
}

// fixedRuleIDs are the ids no activation may edit: the base policy's
// fixed English rules and its built-in middleware's rules.
func fixedRuleIDs(base *Policy) map[string]bool {
	fixed := map[string]bool{}
	if base.English != nil {
		for _, r := range base.English.FixedRules {
			fixed[r.ID] = true
		}
	}
	for _, dir := range []struct {
		d  string
		ms []MiddlewareSpec
	}{{Incoming, base.Incoming}, {Outgoing, base.Outgoing}} {
		for _, m := range dir.ms {
			for _, r := range builtinMiddleware(m, dir.d, base).Rules {
				fixed[r.ID] = true
			}
		}
	}
	return fixed
}

// textOf finds the text of rule id added in revision rev: the policy_read
// list of that revision, else the lists if they all agree, else the base
// policy's initialRules.
func (tb *timelineBuilder) textOf(id, rev string) (EnglishRule, bool) {
	var found []EnglishRule
	for _, pr := range tb.reads {
		for _, r := range pr.Rules {
			if r.ID != id {
				continue
			}
			if pr.ActiveRevision == rev {
				return r, true
			}
			found = append(found, r)
		}
	}
	if len(found) > 0 {
		b0, _ := canon.Marshal(found[0])
		for _, r := range found[1:] {
			if b, _ := canon.Marshal(r); !bytes.Equal(b, b0) {
				return EnglishRule{}, false // the lists disagree: not guessed
			}
		}
		return found[0], true
	}
	if tb.base.English != nil {
		for _, r := range tb.base.English.InitialRules {
			if r.ID == id {
				return r, true
			}
		}
	}
	return EnglishRule{}, false
}

// install applies one activation to the document and records the step.
func (tb *timelineBuilder) install(a Activation) {
	tb.doc = tb.added(a, tb.removed(a))
	step := &Installation{Activation: a, Rules: tb.doc, Known: tb.known, RuleIDs: []string{}}
	for _, r := range tb.doc {
		step.RuleIDs = append(step.RuleIDs, r.ID)
	}
	if prev, ok := tb.byRev[a.ActiveRevision]; ok && strings.Join(sortedIDs(prev.RuleIDs), ",") != strings.Join(sortedIDs(step.RuleIDs), ",") {
		tb.find(FindingRevisionReused, a.Source, "revision %s was activated by %s with rules [%s], now with [%s]: one digest cannot name two installations",
			short(a.ActiveRevision), prev.Activation.Source, strings.Join(prev.RuleIDs, ","), strings.Join(step.RuleIDs, ","))
	}
	tb.byRev[a.ActiveRevision] = step
	if tb.known {
		step.Policy = withEditable(tb.base, tb.doc)
	}
	tb.tl.Steps = append(tb.tl.Steps, step)
}

// removed applies an activation's removals (they come first: "Remove and
// add the same editable id to replace it atomically") and returns what
// the document keeps.
func (tb *timelineBuilder) removed(a Activation) []EnglishRule {
	next := []EnglishRule{}
	removed := map[string]bool{}
	for _, id := range a.RemovedRuleIDs {
		if tb.fixed[id] {
			tb.find(FindingFixedRuleEdited, a.Source, "removes %q, a fixed rule id (policy_update refuses it with fixed-rule)", id)
		}
		if removed[id] {
			tb.find(FindingUnknownRuleRemoved, a.Source, "removes %q twice", id)
		}
		removed[id] = true
	}
	have := map[string]bool{}
	for _, r := range tb.doc {
		have[r.ID] = true
		if !removed[r.ID] {
			next = append(next, r)
		}
	}
	for _, id := range a.RemovedRuleIDs {
		if !have[id] && !tb.fixed[id] {
			tb.find(FindingUnknownRuleRemoved, a.Source, "removes %q, which the editable document does not hold (such an update fails)", id)
		}
	}
	return next
}

// added applies an activation's additions to next.
func (tb *timelineBuilder) added(a Activation, next []EnglishRule) []EnglishRule {
	inNext := map[string]bool{}
	for _, r := range next {
		inNext[r.ID] = true
	}
	for _, id := range a.AddedRuleIDs {
		if tb.fixed[id] {
			tb.find(FindingFixedRuleEdited, a.Source, "adds %q, a fixed rule id (policy_update refuses it with fixed-rule)", id)
			continue
		}
		if inNext[id] {
			tb.find(FindingRuleAddedTwice, a.Source, "adds %q, which the editable document already holds without removing it (such an update fails)", id)
			continue
		}
		inNext[id] = true
		r, ok := tb.textOf(id, a.ActiveRevision)
		if !ok {
			tb.find(FindingRuleTextUnknown, a.Source, "adds %q, whose rule text no policy_read list (or the policy file) gives unambiguously", id)
			tb.known = false
			r = EnglishRule{ID: id}
		}
		next = append(next, r)
	}
	return next
}

// checkReads holds every policy_read list to the installation of its
// revision.
func (tb *timelineBuilder) checkReads() {
	for _, pr := range tb.reads {
		st, ok := tb.byRev[pr.ActiveRevision]
		if !ok {
			tb.find(FindingPolicyReadNotActive, pr.Source, "lists revision %s, which no activation record activated", short(pr.ActiveRevision))
			continue
		}
		ids := []string{}
		for _, r := range pr.Rules {
			ids = append(ids, r.ID)
		}
		if strings.Join(sortedIDs(ids), ",") != strings.Join(sortedIDs(st.RuleIDs), ",") {
			tb.find(FindingPolicyReadDisagrees, pr.Source, "revision %s lists editable rules [%s]; the activations since the first make it [%s]",
				short(pr.ActiveRevision), strings.Join(ids, ","), strings.Join(st.RuleIDs, ","))
		}
	}
}

func sortedIDs(ids []string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	return out
}

func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// withEditable returns a copy of base whose editable English document is
// doc (the fixed rules, chains and settings are the base's).
func withEditable(base *Policy, doc []EnglishRule) *Policy {
	p := *base
	en := &EnglishSpec{FixedRules: []EnglishRule{}, InitialRules: append([]EnglishRule{}, doc...)}
	if base.English != nil {
		en.FixedRules = base.English.FixedRules
	}
	p.English = en
	return &p
}

// At returns the installation active at t (Unix ms): the last activation,
// in sequence order, whose time is not after t; nil before the first.
func (tl *Timeline) At(t int64) *Installation {
	var cur *Installation
	for _, s := range tl.Steps {
		if s.Activation.ActivatedAt <= t {
			cur = s
		}
	}
	return cur
}

// index returns the position of s in the timeline (-1 when absent).
func (tl *Timeline) index(s *Installation) int {
	for i, x := range tl.Steps {
		if x == s {
			return i
		}
	}
	return -1
}

// CheckClaim is what a recorded check says about its installation.
type CheckClaim struct {
	Where      string // file:line
	CheckID    string
	Revision   string // input.configurationDigest
	CapturedAt string // input.capturedAt (RFC 3339)
}

// CheckAgainst places a recorded check in the timeline. A revision no
// activation names is a finding; so is a revision that was not active
// when the check was captured, unless it is the installation replaced
// just before ("Checks already in flight finish on that installation").
func (tl *Timeline) CheckAgainst(c CheckClaim) []HistoryFinding {
	var out []HistoryFinding
	find := func(kind, format string, args ...any) {
		out = append(out, HistoryFinding{Kind: kind, Where: c.Where, Detail: fmt.Sprintf(format, args...)})
	}
	any := false
	for _, s := range tl.Steps {
		if s.Activation.ActiveRevision == c.Revision {
			any = true
		}
	}
	if !any {
		find(FindingRevisionNeverActive, "check %s claims revision %s, which no activation record activated", short(c.CheckID), short(c.Revision))
		return out
	}
	t, err := time.Parse(time.RFC3339Nano, c.CapturedAt)
	if err != nil {
		find(FindingNoCaptureTime, "check %s has no capture time (%q): it cannot be placed in the history", short(c.CheckID), c.CapturedAt)
		return out
	}
	cur := tl.At(t.UnixMilli())
	if cur == nil {
		find(FindingCapturedBeforeHistory, "check %s was captured at %s, before the first activation", short(c.CheckID), c.CapturedAt)
		return out
	}
	if cur.Activation.ActiveRevision == c.Revision {
		return nil
	}
	if i := tl.index(cur); i > 0 && tl.Steps[i-1].Activation.ActiveRevision == c.Revision {
		return nil // in flight across the swap
	}
	find(FindingRevisionNotAtCapture, "check %s claims revision %s, but at %s revision %s was active (activation %d, %s)",
		short(c.CheckID), short(c.Revision), c.CapturedAt, short(cur.Activation.ActiveRevision), cur.Activation.Sequence, cur.Activation.Source)
	return out
}

// eventTimes returns the time (Unix ms) and RFC 3339 text of every event
// of the log at path, by event id.
func eventTimes(path string) (map[string]int64, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, exitcode.Input("read events", err, "check the path given to --events")
	}
	defer f.Close()
	ms, ts := map[string]int64{}, map[string]string{}
	rd := eventlog.NewReader(f, path)
	for {
		ev, err := rd.Next()
		if err != nil {
			// a bad line is reported, named, by the evaluation's own pass
			return ms, ts, nil
		}
		if t, perr := time.Parse(time.RFC3339Nano, ev.TS); perr == nil {
			ms[ev.ID], ts[ev.ID] = t.UnixMilli(), ev.TS
		}
	}
}

// baseEvent is the event a candidate came from ("e7.m2" comes from "e7").
func baseEvent(id string) string {
	if i := strings.Index(id, ".m"); i > 0 {
		return id[:i]
	}
	return id
}

// evaluateOverTime is Evaluate with a policy history: each message is
// checked by the engine of the installation active at its event's time,
// under that activation's recorded revision, with the event's time as its
// capture time. A message before the first activation, or under an
// installation that cannot be rebuilt, is not checked: a finding says so.
func evaluateOverTime(path, eventsDigest string, opts EvaluateOptions) (*Summary, error) {
	tl := opts.Timeline
	if len(tl.Steps) == 0 {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("the activation history is empty: no installation to evaluate under"), "give --activations a history with at least one activation record")
	}
	ms, ts, err := eventTimes(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read events", err, "check the path given to --events")
	}
	defer f.Close()
	revs := []string{}
	for _, s := range tl.Steps {
		revs = append(revs, s.Activation.ActiveRevision)
	}
	last := tl.Steps[len(tl.Steps)-1]
	sum := &Summary{ActiveRevision: last.Activation.ActiveRevision, LocalAgent: opts.LocalAgent, Mode: opts.Policy.Mode,
		Dispositions: map[string]int{}, Reasons: map[string]int{}}
	sum.SnapshotID = SnapshotID(strings.Join(revs, ","), eventsDigest, opts.Timestamp)
	var aw *AuditWriter
	if opts.Audit != nil {
		aw = NewAuditWriter(opts.Audit, sum.SnapshotID)
		if err := aw.Start(opts.Timestamp); err != nil {
			return nil, err
		}
	}
	engineOf := func(s *Installation) (*Engine, error) {
		if s.engine == nil {
			e, err := NewEngine(s.Policy, opts.Provider, opts.LocalAgent, "")
			if err != nil {
				return nil, err
			}
			e.revision = s.Activation.ActiveRevision // the name the history gives it
			s.engine = e
		}
		return s.engine, nil
	}
	var run *Runner // one daemon history across installations; each check runs under its own
	err = ForEachMessage(f, path, opts.Mapping, func(c Candidate) error {
		ev := baseEvent(c.Event)
		at, ok := ms[ev]
		where := path + ": " + c.Event
		if !ok {
			tl.Findings = append(tl.Findings, HistoryFinding{Kind: FindingNoCaptureTime, Where: where, Detail: "the event has no valid time: it cannot be placed in the policy history; not checked"})
			return nil
		}
		step := tl.At(at)
		if step == nil {
			tl.Findings = append(tl.Findings, HistoryFinding{Kind: FindingCapturedBeforeHistory, Where: where,
				Detail: fmt.Sprintf("captured at %s, before the first activation: no firewall installed, not checked", ts[ev])})
			return nil
		}
		if !step.Known {
			tl.Findings = append(tl.Findings, HistoryFinding{Kind: FindingInstallationUnknown, Where: where,
				Detail: fmt.Sprintf("activation %d (%s) cannot be rebuilt (a rule's text is unknown): not re-evaluated", step.Activation.Sequence, step.Activation.Source)})
			return nil
		}
		eng, err := engineOf(step)
		if err != nil {
			return err
		}
		eng.CapturedAt = ts[ev]
		if run == nil {
			run = NewRunner(eng)
			run.Elapsed, run.Closes = opts.Elapsed, opts.Closes
		} else {
			run.eng = eng
		}
		chks, err := run.Step(c)
		if err != nil {
			return exitcode.New(exitcode.Tampered, fmt.Errorf("%s: %w", path, err), "")
		}
		for _, chk := range chks {
			install := func() AuditInstall {
				return AuditInstall{ActiveRevision: eng.Revision(), Mode: step.Policy.Mode, DecisionProvider: step.Policy.DecisionProvider,
					Provider: eng.Provider.Provenance(), Chain: eng.Chain(chk.Input.Direction)}
			}
			if err := emitCheck(sum, aw, install, opts.Each, chk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if aw != nil {
		for _, s := range tl.Steps {
			a := s.Activation
			if err := aw.Activation(ActivationRecord{ActivatedAt: a.ActivatedAt, ActiveRevision: a.ActiveRevision, AddedRuleIDs: a.AddedRuleIDs, RemovedRuleIDs: a.RemovedRuleIDs}); err != nil {
				return nil, err
			}
		}
		if err := aw.Complete(); err != nil {
			return nil, err
		}
		if err := aw.Sign(opts.Signers...); err != nil {
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
	}
	return sum, nil
}

// ActivationReport is the result of placing an audit snapshot's checks in
// a policy history.
type ActivationReport struct {
	Audit    string           `json:"audit"`
	Checks   int              `json:"checks"`
	Timeline *Timeline        `json:"timeline"`
	Findings []HistoryFinding `json:"findings"` // the timeline's, then the checks'
}

// CheckAuditActivations reads a complete snapshot and places each check
// record in the policy history: acts (nil: the snapshot's own activation
// records) with the policy_read lists, over base (optional: without it
// only revisions and rule ids are compared).
func CheckAuditActivations(path string, base *Policy, acts []Activation, reads []*PolicyRead) (*ActivationReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path of the audit snapshot")
	}
	defer f.Close()
	var claims []CheckClaim
	v, err := VerifyAudit(f, path, func(l AuditLine) error {
		var perr error
		rd := l.Reader(&perr)
		c := CheckClaim{Where: fmt.Sprintf("%s:%d", path, l.No), CheckID: rd.String("checkId", false)}
		if in := rd.Object("input", false); in != nil {
			c.Revision = in.String("configurationDigest", false)
			c.CapturedAt = in.String("capturedAt", false)
		}
		claims = append(claims, c)
		return l.Err(perr)
	})
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, exitcode.New(exitcode.Of(err), fmt.Errorf("activations: %w", err), "the history is read only from a complete, untampered snapshot; run 'witness firewall audit verify' on it")
	}
	if acts == nil {
		if acts, err = auditActivations(path); err != nil {
			return nil, err
		}
	}
	tl := BuildTimeline(base, acts, reads)
	rep := &ActivationReport{Audit: path, Checks: len(claims), Timeline: tl, Findings: append([]HistoryFinding{}, tl.Findings...)}
	for _, c := range claims {
		rep.Findings = append(rep.Findings, tl.CheckAgainst(c)...)
	}
	return rep, nil
}

// WriteTimeline writes a policy history as text: one line per activation
// (sequence, time, revision, added and removed ids, the rules then
// active), then each finding.
func WriteTimeline(w io.Writer, tl *Timeline, findings []HistoryFinding) error {
	var b strings.Builder
	for _, s := range tl.Steps {
		a := s.Activation
		state := ""
		if !s.Known {
			state = " (not rebuilt)"
		}
		fmt.Fprintf(&b, "activation %d at %s: revision %s +[%s] -[%s] rules [%s]%s\n", a.Sequence, msTime(a.ActivatedAt), a.ActiveRevision,
			strings.Join(a.AddedRuleIDs, ","), strings.Join(a.RemovedRuleIDs, ","), strings.Join(s.RuleIDs, ","), state)
	}
	for _, f := range findings {
		fmt.Fprintf(&b, "finding: %s\n", f.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
