package core

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Group invariants (docs/formats/firewall.md, "audit verify --group").
const (
	InvariantCanonicalResult  = "canonical-result"    // every member's canonical result of an operation is identical
	InvariantPeerContent      = "peer-content"        // peer content reached each runtime unchanged and attributed, or as an explicit withheld value
	InvariantRefusalFirst     = "refusal-before-send" // a refusal happened before any send bound
	InvariantSharedHistory    = "shared-history"      // local disagreement never changed shared history
	InvariantRecordedDecision = "recorded-decision"   // with a policy: the audit's decisions are the re-evaluation's
)

// GroupMember is one member's evidence: its audit snapshot and its event
// log.
type GroupMember struct {
	Audit  string `json:"audit"`
	Events string `json:"events"`
}

// ParseGroupMember reads a member argument, AUDIT=EVENTS.
func ParseGroupMember(arg string) (GroupMember, error) {
	a, e, ok := strings.Cut(arg, "=")
	if !ok || a == "" || e == "" {
		return GroupMember{}, exitcode.New(exitcode.Usage, fmt.Errorf("group member %q: want AUDIT=EVENTS", arg), "name each member as its audit snapshot and its event log, joined by '=': audit-ada.ndjson=ada.events.jsonl")
	}
	return GroupMember{Audit: a, Events: e}, nil
}

// GroupOptions configures a group verification.
type GroupOptions struct {
	Members []GroupMember
	// Policy, when set, re-evaluates each member's log (answering English
	// questions from that member's own audit) and names the input of every
	// decision that differs from the audit (the recorded-decision invariant).
	Policy *Policy
	// Timestamp is the capture time of the re-evaluation (ATW_WITNESS_TS).
	Timestamp string
}

// GroupFinding is one broken invariant.
type GroupFinding struct {
	Invariant string `json:"invariant"`
	Member    string `json:"member"` // the member whose evidence shows it (its local agent)
	Detail    string `json:"detail"`
}

func (f GroupFinding) String() string {
	return fmt.Sprintf("violation: %s: %s: %s", f.Invariant, f.Member, f.Detail)
}

// GroupMemberSummary is what was read of one member.
type GroupMemberSummary struct {
	GroupMember
	LocalAgent   string `json:"localAgent"`
	SnapshotID   string `json:"snapshotId"`
	Checks       int    `json:"checks"`
	Messages     int    `json:"messages"`
	EventsSHA256 string `json:"eventsSha256"`
}

// GroupVerdict is the result of VerifyGroup.
type GroupVerdict struct {
	Members    []GroupMemberSummary `json:"members"`
	Operations int                  `json:"operations"` // collective operations whose canonical results were compared
	Posts      int                  `json:"posts"`      // peer posts followed to another member
	Findings   []GroupFinding       `json:"findings"`
}

// Err returns a Violation error when an invariant is broken.
func (v *GroupVerdict) Err() error {
	if len(v.Findings) == 0 {
		return nil
	}
	return exitcode.New(exitcode.Violation, fmt.Errorf("group: %d invariant violations", len(v.Findings)), "each violation line names the invariant, the member and the evidence")
}

// Write prints the verdict, one line per finding, then a summary line.
func (v *GroupVerdict) Write(w io.Writer) error {
	for _, m := range v.Members {
		if _, err := fmt.Fprintf(w, "member %s: %s (snapshot %s, %d checks) = %s (%d messages)\n", m.LocalAgent, m.Audit, m.SnapshotID, m.Checks, m.Events, m.Messages); err != nil {
			return err
		}
	}
	for _, f := range v.Findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	status := "ok"
	if len(v.Findings) > 0 {
		status = fmt.Sprintf("%d violations", len(v.Findings))
	}
	_, err := fmt.Fprintf(w, "group: %d members, %d operations, %d peer posts: %s\n", len(v.Members), v.Operations, v.Posts, status)
	return err
}

// memberEvidence is one member's log and audit, indexed.
type memberEvidence struct {
	GroupMemberSummary
	msgs    []Candidate
	byEvent map[string]Candidate
	checks  []RecordedCheck
	byCheck map[string]RecordedCheck // by candidate event
}

func (m *memberEvidence) name() string { return m.LocalAgent }

// VerifyGroup checks, across the audits and logs of several members of one
// conversation, what can be checked offline: identical canonical results,
// peer content unchanged and attributed (or explicitly withheld), refusals
// before any send bound, shared history unchanged by local disagreement;
// with a policy, that each audit's decisions are the re-evaluation's.
//
// A member given twice (same file, same snapshot, same log, or the same
// agent) is a usage error; an incomplete audit or log is exit 4; an audit
// that does not belong to the log beside it (a swapped file) is invalid
// evidence, exit 3. Broken invariants are findings (GroupVerdict.Err: exit
// 1).
func VerifyGroup(opts GroupOptions) (*GroupVerdict, error) {
	if len(opts.Members) < 2 {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("group: %d members given", len(opts.Members)), "give at least two members, each as AUDIT=EVENTS")
	}
	v := &GroupVerdict{Findings: []GroupFinding{}}
	var ms []*memberEvidence
	seen := map[string]string{}
	dup := func(kind, key, arg string) error {
		if prev, ok := seen[kind+"\x00"+key]; ok {
			return exitcode.New(exitcode.Usage, fmt.Errorf("group: member %s repeats member %s (same %s %s)", arg, prev, kind, key), "give each member once: a duplicated member would vouch for itself")
		}
		seen[kind+"\x00"+key] = arg
		return nil
	}
	for _, gm := range opts.Members {
		m, err := readMember(gm)
		if err != nil {
			return nil, err
		}
		arg := gm.Audit + "=" + gm.Events
		for _, k := range [][2]string{{"audit file", filepath.Clean(gm.Audit)}, {"event log", filepath.Clean(gm.Events)},
			{"snapshot", m.SnapshotID}, {"event log digest", m.EventsSHA256}, {"agent", m.LocalAgent}} {
			if err := dup(k[0], k[1], arg); err != nil {
				return nil, err
			}
		}
		ms = append(ms, m)
		v.Members = append(v.Members, m.GroupMemberSummary)
	}
	add := func(inv string, m *memberEvidence, format string, a ...any) {
		v.Findings = append(v.Findings, GroupFinding{Invariant: inv, Member: m.name(), Detail: fmt.Sprintf(format, a...)})
	}
	checkResults(v, ms, add)
	checkPeerContent(v, ms, add)
	checkRefusals(ms, add)
	checkSharedHistory(ms, add)
	if opts.Policy != nil {
		for _, m := range ms {
			ds, err := reevaluateMember(m, opts)
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				add(InvariantRecordedDecision, m, "%s", d.String())
			}
		}
	}
	return v, nil
}

// readMember reads and binds one member's audit and log.
func readMember(gm GroupMember) (*memberEvidence, error) {
	af, err := os.Open(gm.Audit)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the AUDIT path of each member")
	}
	defer af.Close()
	checks, av, err := ReadRecordedChecks(af, gm.Audit)
	if err != nil {
		return nil, err
	}
	ef, err := os.Open(gm.Events)
	if err != nil {
		return nil, exitcode.Input("read events", err, "check the EVENTS path of each member")
	}
	defer ef.Close()
	h := sha256.New()
	m := &memberEvidence{byEvent: map[string]Candidate{}, byCheck: map[string]RecordedCheck{}, checks: checks}
	err = ForEachMessage(io.TeeReader(ef, h), gm.Events, nil, func(c Candidate) error {
		m.msgs = append(m.msgs, c)
		m.byEvent[c.Event] = c
		return nil
	})
	if err == nil {
		_, err = io.Copy(h, ef)
	}
	if err != nil {
		var ee *exitcode.Error
		if errors.As(err, &ee) {
			return nil, err
		}
		return nil, exitcode.New(exitcode.Failure, err, "")
	}
	m.GroupMemberSummary = GroupMemberSummary{GroupMember: gm, SnapshotID: av.SnapshotID, Checks: len(checks), Messages: len(m.msgs), EventsSHA256: hex.EncodeToString(h.Sum(nil))}
	for _, c := range checks {
		if m.LocalAgent == "" {
			m.LocalAgent = c.LocalAgent
		}
		m.byCheck[c.Event] = c
		if err := bindCheck(m, c); err != nil {
			return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("%s:%d: check of %s: %w", gm.Audit, c.Line, c.Event, err),
				fmt.Sprintf("the audit does not belong to %s: give each member's own audit and log (a swapped file?)", gm.Events))
		}
	}
	if m.LocalAgent == "" {
		m.LocalAgent = localAgentOf(m.msgs)
	}
	if m.LocalAgent == "" {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("group member %s: cannot tell its agent: no check and no outgoing message", gm.Audit), "give members whose audit holds at least one check")
	}
	return m, nil
}

func localAgentOf(ms []Candidate) string {
	for _, c := range ms {
		if c.Message.Direction == Outgoing {
			return c.Message.Sender
		}
	}
	return ""
}

// bindCheck checks that a recorded check's candidate is the message the log
// holds under its event (a result's answer or question included).
func bindCheck(m *memberEvidence, c RecordedCheck) error {
	sender, text, conv, found := "", "", "", false
	if x, ok := m.byEvent[c.Event]; ok {
		sender, text, conv, found = x.Message.Sender, x.Message.Text, x.Message.Conversation, true
	} else if re := resultEventOf(c.Event); re != "" {
		if x, ok := m.byEvent[re]; ok {
			conv = x.Message.Conversation
			if strings.HasSuffix(c.Event, ".q") {
				sender, text, found = x.Message.Sender, x.Message.Text, true
			} else {
				var i int
				if _, err := fmt.Sscanf(c.Event[len(re)+2:], "%d", &i); err == nil && i >= 0 && i < len(x.Message.Answers) {
					sender, text, found = x.Message.Answers[i].Member, x.Message.Answers[i].Text, true
				}
			}
		}
	} else if strings.HasSuffix(c.Event, ".restart") {
		return nil // made by a restart, not read from the log
	}
	switch {
	case !found:
		return fmt.Errorf("the log has no message %s", c.Event)
	case sender != c.Sender || text != c.Text || conv != c.Conversation:
		return fmt.Errorf("the log's message %s differs from the checked candidate (sender, conversation or text)", c.Event)
	}
	return nil
}

// canonicalResult is the digest of a result's canonical content.
func canonicalResult(msg eventlog.Message) string {
	b, _ := canon.Marshal(map[string]any{"operationId": msg.OperationID, "conversation": msg.Conversation, "sender": msg.Sender,
		"question": msg.Text, "answers": msg.Answers})
	return sha256Hex(b)
}

// checkResults: every member's canonical result of an operation is
// identical, withheld answers included (a check changes only the local
// projection).
func checkResults(v *GroupVerdict, ms []*memberEvidence, add func(string, *memberEvidence, string, ...any)) {
	type first struct {
		m      *memberEvidence
		digest string
	}
	results := map[string]first{}
	var ops []string
	for _, m := range ms {
		for _, c := range m.msgs {
			if c.Message.Operation != OpResult || c.Message.OperationID == "" {
				continue
			}
			d := canonicalResult(c.Message)
			f, ok := results[c.Message.OperationID]
			if !ok {
				results[c.Message.OperationID] = first{m, d}
				ops = append(ops, c.Message.OperationID)
				continue
			}
			if f.digest != d {
				add(InvariantCanonicalResult, m, "operation %s: the result %s differs from %s's canonical result", c.Message.OperationID, c.Event, f.m.name())
			}
		}
	}
	v.Operations = len(ops)
}

type postID struct{ author, post string }

func postOfCandidate(c Candidate) (postID, bool) {
	p := c.Post()
	if p == nil {
		return postID{}, false
	}
	return postID{p.AuthorAgentID, p.PostID}, true
}

// outgoingPosts returns a member's own bound posts by post reference.
func outgoingPosts(m *memberEvidence) map[postID]Candidate {
	out := map[postID]Candidate{}
	for _, c := range m.msgs {
		if c.Message.Direction != Outgoing {
			continue
		}
		if p, ok := postOfCandidate(c); ok {
			out[p] = c
		}
	}
	return out
}

// checkPeerContent: every incoming post whose author is a member reached
// the runtime unchanged and attributed to that author; every answer line of
// a result is the answering member's post unchanged (the runtime then reads
// it unchanged, or as a withheld value when the member's check withheld it,
// which the audit records).
func checkPeerContent(v *GroupVerdict, ms []*memberEvidence, add func(string, *memberEvidence, string, ...any)) {
	byAgent := map[string]*memberEvidence{}
	for _, m := range ms {
		byAgent[m.LocalAgent] = m
	}
	own := map[string]map[postID]Candidate{}
	for _, m := range ms {
		own[m.LocalAgent] = outgoingPosts(m)
	}
	for _, m := range ms {
		for _, c := range m.msgs {
			if c.Message.Direction != Incoming {
				continue
			}
			if p, ok := postOfCandidate(c); ok {
				author := byAgent[p.author]
				if author == nil || author == m {
					continue
				}
				v.Posts++
				src, ok := own[p.author][p]
				switch {
				case !ok:
					add(InvariantPeerContent, m, "%s: post %s attributed to %s, whose log never sent it", c.Event, p.post, p.author)
				case src.Message.Text != c.Message.Text:
					add(InvariantPeerContent, m, "%s: post %s of %s reached this member changed (the author's log %s has other text)", c.Event, p.post, p.author, src.Event)
				case c.Message.Sender != p.author:
					add(InvariantPeerContent, m, "%s: post %s of %s is attributed to %s", c.Event, p.post, p.author, c.Message.Sender)
				}
			}
			if c.Message.Operation != OpResult {
				continue
			}
			for i, a := range c.Message.Answers {
				author := byAgent[a.Member]
				if author == nil || a.Outcome != "answered" || a.PostID == "" {
					continue
				}
				src, ok := own[a.Member][postID{a.Member, a.PostID}]
				if !ok {
					add(InvariantPeerContent, m, "%s answer %d: post %s attributed to %s, whose log never sent it", c.Event, i, a.PostID, a.Member)
					continue
				}
				if src.Message.Text != a.Text {
					add(InvariantPeerContent, m, "%s answer %d: %s's answer %s is not the text its log sent (%s)", c.Event, i, a.Member, a.PostID, src.Event)
				}
			}
		}
	}
}

// refused reports whether a member's audit holds a check that kept this
// outgoing step from binding.
func refused(m *memberEvidence, c Candidate) (RecordedCheck, bool) {
	rc, ok := m.byCheck[c.Event]
	if !ok || rc.Direction != Outgoing {
		return RecordedCheck{}, false
	}
	return rc, rc.Disposition != DispositionAdmitted
}

// checkRefusals: a refusal is a typed send failure before any send intent
// binds: no member received a post its author's audit refused, and a
// refused gather or all_gather posted no request and no close.
func checkRefusals(ms []*memberEvidence, add func(string, *memberEvidence, string, ...any)) {
	refusedPosts := map[postID]string{}
	refusedOps := map[string]string{}
	for _, m := range ms {
		for _, c := range m.msgs {
			rc, ok := refused(m, c)
			if !ok {
				continue
			}
			if p, ok := postOfCandidate(c); ok {
				refusedPosts[p] = fmt.Sprintf("%s (%s %s)", rc.CheckID, m.name(), c.Event)
			}
			if isRequest(c.Message.Operation) && c.Message.OperationID != "" {
				refusedOps[m.LocalAgent+"\x00"+c.Message.OperationID] = fmt.Sprintf("%s (%s %s)", rc.CheckID, m.name(), c.Event)
			}
		}
	}
	for _, m := range ms {
		for _, c := range m.msgs {
			if p, ok := postOfCandidate(c); ok && c.Message.Direction == Incoming {
				if by, bad := refusedPosts[p]; bad {
					add(InvariantRefusalFirst, m, "%s: received post %s of %s, which its author's check %s refused", c.Event, p.post, p.author, by)
				}
			}
			op := c.Message.OperationID
			if op == "" || (c.Message.Operation != OpRequest && c.Message.Operation != OpClose) {
				continue
			}
			author := c.Message.Sender
			if c.Message.Direction == Outgoing {
				author = m.LocalAgent
			}
			if by, bad := refusedOps[author+"\x00"+op]; bad {
				add(InvariantRefusalFirst, m, "%s: a %s of operation %s, which never started: check %s refused it", c.Event, c.Message.Operation, op, by)
			}
		}
	}
}

// checkSharedHistory: local disagreement never changed shared history.
// Where members' checks of the same peer content disagree (one admitted
// it, another withheld it), each still holds the same record: the same
// post text, the same answer line in the canonical result (that a
// member's withheld answer is still in its own canonical result follows
// from binding: its audit's check of the line is the line its log holds).
func checkSharedHistory(ms []*memberEvidence, add func(string, *memberEvidence, string, ...any)) {
	type view struct {
		m           *memberEvidence
		disposition string
		content     string // "" when the member's record lacks it
		event       string
	}
	items := map[string][]view{}
	var keys []string
	note := func(key string, v view) {
		if _, ok := items[key]; !ok {
			keys = append(keys, key)
		}
		items[key] = append(items[key], v)
	}
	for _, m := range ms {
		for _, c := range m.msgs {
			if c.Message.Direction != Incoming {
				continue
			}
			if p, ok := postOfCandidate(c); ok && c.Message.Operation != OpAnswer {
				if rc, ok := m.byCheck[c.Event]; ok {
					note("post "+p.author+" "+p.post, view{m, rc.Disposition, c.Message.Text, c.Event})
				}
			}
			if c.Message.Operation != OpResult || c.Message.OperationID == "" {
				continue
			}
			lines := map[string]string{}
			for _, a := range c.Message.Answers {
				lines[a.Member] = a.Text
			}
			for i, a := range c.Message.Answers {
				rc, ok := m.byCheck[fmt.Sprintf("%s.a%d", c.Event, i)]
				if !ok {
					continue
				}
				note("answer "+c.Message.OperationID+" "+a.Member, view{m, rc.Disposition, lines[a.Member], c.Event})
			}
		}
	}
	for _, k := range keys {
		vs := items[k]
		disagree := false
		for _, v := range vs[1:] {
			if v.disposition != vs[0].disposition {
				disagree = true
			}
		}
		if !disagree {
			continue
		}
		for _, v := range vs[1:] {
			if v.content != vs[0].content {
				add(InvariantSharedHistory, v.m, "%s (%s here, %s at %s): the record differs between members that decided differently (%s)", k, v.disposition, vs[0].disposition, vs[0].m.name(), v.event)
			}
		}
	}
}

// reevaluateMember re-evaluates a member's log under the policy, answering
// English questions from the member's own audit, and compares.
func reevaluateMember(m *memberEvidence, opts GroupOptions) ([]Disagreement, error) {
	prov, err := LoadJudgments(m.Audit)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(m.Events)
	if err != nil {
		return nil, exitcode.Input("read events", err, "")
	}
	defer f.Close()
	var checks []*Check
	_, err = Evaluate(f, m.Events, m.EventsSHA256, EvaluateOptions{Policy: opts.Policy, Provider: prov, LocalAgent: m.LocalAgent, Timestamp: capturedAtOf(m, opts.Timestamp),
		Each: func(c *Check) error { checks = append(checks, c); return nil }})
	if err != nil {
		return nil, err
	}
	return Disagreements(m.checks, checks), nil
}

// capturedAtOf is the capture time the member's audit used (so identical
// inputs give identical check references), else ts.
func capturedAtOf(m *memberEvidence, ts string) string {
	for _, c := range m.checks {
		if c.CapturedAt != "" {
			return c.CapturedAt
		}
	}
	return ts
}
