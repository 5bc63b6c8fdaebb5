package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/verify"
)

// The first screen of the page tells the story: what went wrong (one
// sentence per finding, worst first), the worst finding's chain and what
// the findings touched. Every sentence is made from the finding's events
// (its tool, its path arguments, its external effects, the source its
// chain leads back to), one template per finding code; a code without a
// template says verify's message (docs/design/report-story.md).

const (
	maxEffects    = 1000 // external effects kept per log
	maxTouched    = 12   // effects and paths named on the first screen
	maxStorySteps = 8    // steps of the worst finding's chain on the first screen
)

// story is what the first screen shows besides the sentences.
type story struct {
	Worst   int         `json:"worst"`             // index of the worst finding, -1 for none
	Path    []storyStep `json:"path,omitempty"`    // its chain, the source first, the finding's event last
	Elided  int         `json:"elided,omitempty"`  // steps of the path left out in the middle
	Touched []touch     `json:"touched,omitempty"` // what the findings touched
	Notices int         `json:"notices"`           // findings of class notice (listed below, not in the story)
}

// storyStep is one step of the worst finding's chain, in words.
type storyStep struct {
	Ref  string `json:"ref"`
	What string `json:"what"`
	Text string `json:"text,omitempty"`
	Rel  string `json:"rel,omitempty"`  // how the next step depends on this one
	Role string `json:"role,omitempty"` // source (where untrusted content entered), action (the finding's event)
	Row  int    `json:"row"`            // timeline row, -1 for none
}

// touch is one thing a finding's event touched: an external effect the
// log records for it, or a path argument of its call.
type touch struct {
	What   string `json:"what"`   // the effect's op (write, delete...) or "path argument"
	Target string `json:"target"` // a path, URL, recipient
	Ref    string `json:"ref"`    // the event that did it
	Tool   string `json:"tool,omitempty"`
	Note   string `json:"note,omitempty"` // why the witness believes it happened
	Row    int    `json:"row"`
}

// effectRec is one external_effect event of a log.
type effectRec struct {
	id, call, op, target, reason, tool string
}

func addEffect(list []effectRec, e *eventlog.Event) []effectRec {
	if e.Effect == nil || len(list) >= maxEffects {
		return list
	}
	return append(list, effectRec{id: e.ID, call: e.Call, op: e.Effect.Op, target: e.Effect.Target, reason: e.Effect.Reason, tool: e.Tool})
}

// checkRow is a check as the page shows it: a failing check says why with
// its first finding's message (and how many more it has).
func checkRow(c verify.CheckResult, fs []verify.Finding) Check {
	row := Check{ID: c.ID, Title: c.Title, Status: string(c.Status), Reason: c.Reason}
	if c.Status != verify.StatusFail || row.Reason != "" {
		return row
	}
	var first string
	n := 0
	for _, f := range fs {
		if f.Check != c.ID || f.Class == verify.ClassNotice {
			continue
		}
		if n == 0 {
			first = f.Message
			if f.EventID != "" && !strings.Contains(first, f.EventID) {
				first += " (" + f.EventID + ")"
			}
		}
		n++
	}
	switch {
	case n == 0:
		row.Reason = fmt.Sprintf("%d finding(s) of this check fail it", c.Findings)
	case n == 1:
		row.Reason = first
	default:
		row.Reason = fmt.Sprintf("%s; and %d more", first, n-1)
	}
	return row
}

// teller holds what the sentences are made from.
type teller struct {
	d       *Data
	logs    []*logState
	details map[int]*Detail
}

// tell writes each finding's sentence, orders the findings worst first
// and fills the story. It runs once the details are embedded: the
// findings' events and their chains' are among them.
func tell(d *Data, logs []*logState, _ Options) {
	t := teller{d: d, logs: logs, details: map[int]*Detail{}}
	for i := range d.Details {
		t.details[d.Details[i].Row] = &d.Details[i]
	}
	touches := make([][]touch, len(d.Findings))
	for i := range d.Findings {
		f := &d.Findings[i]
		touches[i] = t.touched(f)
		f.Sentence = t.sentence(f, touches[i])
	}
	// worst first: the verdict's precedence of classes, errors before
	// warnings, a causal finding (injection) before the ones it explains,
	// then a finding whose event touched something; else verify's order
	idx := make([]int, len(d.Findings))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		fa, fb := &d.Findings[idx[a]], &d.Findings[idx[b]]
		if ca, cb := classRank(fa.Class), classRank(fb.Class); ca != cb {
			return ca > cb
		}
		if sa, sb := sevRank(fa.Severity), sevRank(fb.Severity); sa != sb {
			return sa > sb
		}
		if ia, ib := isInjection(fa.Code), isInjection(fb.Code); ia != ib {
			return ia
		}
		return len(touches[idx[a]]) > 0 && len(touches[idx[b]]) == 0
	})
	sorted := make([]Finding, len(idx))
	sortedT := make([][]touch, len(idx))
	for i, j := range idx {
		sorted[i], sortedT[i] = d.Findings[j], touches[j]
	}
	d.Findings = sorted
	d.Story = story{Worst: -1}
	seen := map[string]bool{}
	for i, f := range d.Findings {
		if f.Class == string(verify.ClassNotice) {
			d.Story.Notices++
			continue
		}
		if d.Story.Worst < 0 {
			d.Story.Worst = i
			d.Story.Path, d.Story.Elided = t.path(&d.Findings[i])
		}
		for _, x := range sortedT[i] {
			k := x.What + "\x00" + x.Target
			if seen[k] || len(d.Story.Touched) >= maxTouched {
				continue
			}
			seen[k] = true
			d.Story.Touched = append(d.Story.Touched, x)
		}
	}
}

func sevRank(s string) int {
	switch s {
	case string(verify.SevError):
		return 2
	case string(verify.SevWarning):
		return 1
	}
	return 0
}

func isInjection(code string) bool {
	return code == "injection-provenance" || code == "ambiguous-injection-provenance"
}

// ref names event ev of log li as `witness why` does: LOGNAME:eN with
// several logs, eN with one.
func (t *teller) ref(li int, ev string) string {
	if len(t.d.Logs) > 1 && li >= 0 && li < len(t.d.Logs) && t.d.Logs[li].Server != "" {
		return t.d.Logs[li].Server + ":" + ev
	}
	return ev
}

// rowOfRef is the timeline row of a why reference (fs:e7, e7, model:e4#0).
func (t *teller) rowOfRef(ref string) int {
	li, ev := 0, ref
	if i := strings.LastIndexByte(ref, ':'); i >= 0 && len(t.d.Logs) > 1 {
		li = -1
		for j, l := range t.d.Logs {
			if l.Server == ref[:i] {
				li = j
			}
		}
		ev = ref[i+1:]
	}
	if i := strings.IndexByte(ev, '#'); i >= 0 {
		ev = ev[:i]
	}
	if li < 0 || li >= len(t.logs) {
		return -1
	}
	if r, ok := t.logs[li].rowOf[ev]; ok {
		return r
	}
	return -1
}

// paths are the path arguments of the call at row r (its payload, a JSON
// object of arguments), in key order.
func (t *teller) paths(r int) []string {
	det := t.details[r]
	if det == nil || det.Payload == "" || det.PayloadN > len(det.Payload) {
		return nil
	}
	var args map[string]any
	if json.Unmarshal([]byte(det.Payload), &args) != nil {
		return nil
	}
	var out []string
	for _, p := range verify.PathArgs(args) {
		out = append(out, p.Value)
	}
	if len(out) == 0 {
		// a resource read names its URI
		if u, ok := args["uri"].(string); ok && u != "" {
			out = append(out, u)
		}
	}
	return out
}

// touched is what the finding's event touched: the effects its log
// records for it (an effect event whose call is the finding's event), then
// the path arguments of its call that no effect names.
func (t *teller) touched(f *Finding) []touch {
	if f.Event == "" || f.Row < 0 || f.Class == string(verify.ClassNotice) {
		return nil
	}
	var out []touch
	named := map[string]bool{}
	for _, e := range t.logs[f.Log].effects {
		if e.call != f.Event && e.id != f.Event {
			continue
		}
		tool := e.tool
		if tool == "" {
			tool = f.Tool
		}
		row, ok := t.logs[f.Log].rowOf[e.id]
		if !ok {
			row = -1
		}
		out = append(out, touch{What: e.op, Target: e.target, Ref: t.ref(f.Log, e.id), Tool: tool, Note: e.reason, Row: row})
		named[e.target] = true
	}
	if det := t.details[f.Row]; det != nil && det.Kind == string(eventlog.KindToolCall) {
		for _, p := range t.paths(f.Row) {
			if !named[p] {
				named[p] = true
				out = append(out, touch{What: "path argument", Target: p, Ref: t.ref(f.Log, f.Event), Tool: f.Tool, Row: f.Row})
			}
		}
	}
	return out
}

// effectVerb says an effect's op as a verb with its object.
func effectVerb(op, target string) string {
	v := map[string]string{"read": "read", "write": "wrote to", "overwrite": "overwrote", "delete": "deleted",
		"send": "sent to", "payment": "made a payment to", "exec": "ran"}[op]
	if v == "" {
		v = "acted on"
	}
	if target == "" {
		return v
	}
	return v + " " + target
}

// action says what the finding's event did: "write_file wrote to
// /srv/x (fs:e8)", "the agent called delete_file on /srv/x (e14)", "the
// model asked for write_file (model:e4)".
func (t *teller) action(f *Finding, ts []touch) string {
	ref := t.ref(f.Log, f.Event)
	tool := f.Tool
	det := t.details[f.Row]
	if tool == "" && det != nil {
		tool = det.Tool
	}
	if det != nil && det.Kind == string(eventlog.KindModelOutput) {
		if tool != "" {
			return fmt.Sprintf("the model asked for %s (%s)", tool, ref)
		}
		return fmt.Sprintf("the model answered (%s)", ref)
	}
	for _, x := range ts {
		if x.What != "path argument" {
			return fmt.Sprintf("%s %s (%s)", tool, effectVerb(x.What, x.Target), ref)
		}
	}
	var on []string
	for _, x := range ts {
		on = append(on, x.Target)
	}
	switch {
	case tool == "":
		return fmt.Sprintf("event %s", ref)
	case len(on) > 0:
		return fmt.Sprintf("the agent called %s on %s (%s)", tool, strings.Join(on, " and "), ref)
	}
	return fmt.Sprintf("the agent called %s (%s)", tool, ref)
}

// source says where the chain of an injection finding leads back to: the
// untrusted content and the call that brought it in.
func (t *teller) source(f *Finding) string {
	src := sourceRef(f.vf)
	if src == "" || f.Chain == nil {
		return "content the seal marks untrusted"
	}
	for _, s := range f.Chain.Steps {
		if s.Ref != src {
			continue
		}
		// the call that generated the content names what it read
		for _, l := range s.Links {
			c := f.Chain.Steps[l.To]
			if c.Kind != "activity" {
				continue
			}
			tool := firstWord(c.Text)
			r := t.rowOfRef(c.Ref)
			if r >= 0 {
				if det := t.details[r]; det != nil && det.Tool != "" {
					tool = det.Tool
				}
				if ps := t.paths(r); len(ps) > 0 {
					return fmt.Sprintf("%s (%s, %s)", strings.Join(ps, " and "), tool, src)
				}
			}
			if tool != "" {
				return fmt.Sprintf("what %s returned (%s)", tool, src)
			}
		}
		return fmt.Sprintf("%s (%s)", s.What, src)
	}
	return src
}

// sourceRef is the untrusted source an injection finding's chain ends at
// (verify's chain: "LOG:EVENT KIND: EXCERPT" per step, the source last).
func sourceRef(f verify.Finding) string {
	if len(f.Chain) == 0 {
		return ""
	}
	return firstWord(f.Chain[len(f.Chain)-1])
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// sentence is the finding in one sentence, from its code's template.
func (t *teller) sentence(f *Finding, ts []touch) string {
	if f.Event == "" || f.Row < 0 {
		return sentenceOf(f.Message)
	}
	act := t.action(f, ts)
	switch f.Code {
	case "injection-provenance":
		return fmt.Sprintf("%s after the model read %s, untrusted content that may carry an injected instruction.", act, t.source(f))
	case "ambiguous-injection-provenance":
		return fmt.Sprintf("%s, and may follow untrusted content (%s): it depends on an ambiguous join whose candidates differ in trust.", act, t.source(f))
	case "unsealed-tool":
		return fmt.Sprintf("%s, and the seal does not list %s.", act, f.Tool)
	case "argument-out-of-scope", "effect-out-of-scope":
		return fmt.Sprintf("%s, outside the scopes the seal grants %s.", act, f.Tool)
	case "failed-answer-acted-on":
		return fmt.Sprintf("%s on a model answer that failed or was cut short.", act)
	case "unrequested-tool-call":
		return fmt.Sprintf("%s, and no model output asked for it.", act)
	}
	s := sentenceOf(f.Message)
	if ref := t.ref(f.Log, f.Event); !strings.Contains(s, f.Event) {
		s = strings.TrimSuffix(s, ".") + " (" + ref + ")."
	}
	return s
}

// sentenceOf ends a message as a sentence.
func sentenceOf(m string) string {
	m = strings.TrimSpace(m)
	if m == "" || strings.HasSuffix(m, ".") {
		return m
	}
	return m + "."
}

// path is the worst finding's chain in words, the source first: for an
// injection finding the steps from the untrusted source to the action,
// else the chain's steps, one per event; long paths keep their ends.
func (t *teller) path(f *Finding) ([]storyStep, int) {
	if f.Chain == nil || len(f.Chain.Steps) == 0 {
		if f.Event == "" {
			return nil, 0
		}
		return []storyStep{{Ref: t.ref(f.Log, f.Event), What: f.Code, Text: f.Tool, Role: "action", Row: f.Row}}, 0
	}
	st := f.Chain.Steps
	var ix []int
	if src := sourceRef(f.vf); src != "" {
		ix = chainPath(st, src)
	}
	if ix == nil {
		// one step per event, the last of each (the chain is causes first)
		last := map[string]int{}
		for i, s := range st {
			if s.Ref != "" {
				last[s.Ref] = i
			}
		}
		for i, s := range st {
			if s.Ref != "" && last[s.Ref] == i {
				ix = append(ix, i)
			}
		}
		if len(ix) == 0 || ix[len(ix)-1] != len(st)-1 {
			ix = append(ix, len(st)-1)
		}
	}
	var out []storyStep
	for k, i := range ix {
		s := st[i]
		ss := storyStep{Ref: s.Ref, What: s.What, Text: s.Text, Row: -1}
		if ss.What == "" {
			ss.What = strings.ReplaceAll(s.Label, "\n", " ")
		}
		if i < len(f.ChainRows) {
			ss.Row = f.ChainRows[i]
		}
		if k+1 < len(ix) {
			for _, l := range st[ix[k+1]].Links {
				if l.To == i {
					ss.Rel = l.Rel
				}
			}
		}
		if k == len(ix)-1 {
			ss.Role = "action"
		} else if k == 0 && f.vf.Chain != nil {
			ss.Role = "source"
		}
		out = append(out, ss)
	}
	if len(out) <= maxStorySteps {
		return out, 0
	}
	elided := len(out) - maxStorySteps
	return append(out[:2:2], out[len(out)-(maxStorySteps-2):]...), elided
}

// chainPath is the shortest way along the chain's links from its last
// step back to the step src names, source first; nil when there is none.
func chainPath(st []Step, src string) []int {
	end := len(st) - 1
	from := map[int]int{end: -1}
	queue := []int{end}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if st[i].Ref == src && i != end {
			var out []int
			for j := i; j >= 0; j = from[j] {
				out = append(out, j)
			}
			return out
		}
		for _, l := range st[i].Links {
			if _, ok := from[l.To]; !ok {
				from[l.To] = i
				queue = append(queue, l.To)
			}
		}
	}
	return nil
}
