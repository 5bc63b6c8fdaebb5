package core

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/verdict"
)

// Graph vocabulary of the firewall overlay (in the witness namespace).
const (
	WFirewallCheck   = graph.NSWitness + "FirewallCheck"  // prov:Activity: one firewall check
	WCheckID         = graph.NSWitness + "checkId"        // chk_ + 64 hex
	WDisposition     = graph.NSWitness + "disposition"    // admitted | withheld | refused | ...
	WDecisionReason  = graph.NSWitness + "decisionReason" // prohibition, norm-violation, admission, ...
	WDecidedBy       = graph.NSWitness + "decidedBy"      // one value per deciding rule id
	WDecisionCause   = graph.NSWitness + "decisionCause"  // judgment, uncertain, unavailable, code, endpoint, default
	WNextAction      = graph.NSWitness + "nextAction"     // revise, wait, stop, seek-approval
	WCheckedEvent    = graph.NSWitness + "checkedEvent"   // the check's candidate event id
	WActiveRevision  = graph.NSWitness + "activeRevision" // the installation digest
	WAuditSnapshotID = graph.NSWitness + "auditSnapshotId"
)

// OverlayResult counts what AddAuditOverlay added.
type OverlayResult struct {
	Checks   int `json:"checks"`
	Linked   int `json:"linked"`   // checks linked to a message of the graph
	Unlinked int `json:"unlinked"` // checks whose message is not in the graph
}

// messageIndex finds message nodes by post reference and by event id.
type messageIndex struct {
	byPost  map[string]*graph.Node
	byEvent map[string]*graph.Node
}

func indexMessages(g *graph.Graph) *messageIndex {
	ix := &messageIndex{byPost: map[string]*graph.Node{}, byEvent: map[string]*graph.Node{}}
	for _, n := range g.OfType(graph.WAgentMessage) {
		if id := n.Value(graph.WEventID); id != "" {
			ix.byEvent[id] = n
		}
		post, author := n.Value(graph.WPostID), n.Value(graph.WAuthorAgentID)
		if author == "" {
			author = n.Value(graph.WSender)
		}
		if post != "" {
			k := author + "\x00" + post
			if _, dup := ix.byPost[k]; !dup {
				ix.byPost[k] = n
			}
		}
	}
	return ix
}

// AddAuditOverlayFile adds the checks of the audit snapshot at path to g.
func AddAuditOverlayFile(g *graph.Graph, path string) (*OverlayResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path given to --firewall-audit")
	}
	defer f.Close()
	return AddAuditOverlay(g, f, path)
}

// AddAuditOverlay adds one witness:FirewallCheck activity per check record
// of a complete snapshot: prov:used the checked message (found by its post
// reference, else by the check's event id), with its disposition, reason,
// decidedBy, cause, next action and check id. An incomplete snapshot is
// refused (exit code Incomplete).
func AddAuditOverlay(g *graph.Graph, r io.Reader, name string) (*OverlayResult, error) {
	ix := indexMessages(g)
	res := &OverlayResult{}
	var nodes []*graph.Node
	var snapshot string
	v, err := VerifyAudit(r, name, func(l AuditLine) error {
		rec, err := readOverlayCheck(l)
		if err != nil {
			return err
		}
		if rec.CheckID == "" {
			return fmt.Errorf("no checkId")
		}
		n := graph.NewNode("urn:witness:firewall:" + graph.PctEncode(rec.CheckID))
		n.Types = []string{graph.ProvActivity, WFirewallCheck}
		add := func(p, v string) {
			if v != "" {
				n.Add(p, graph.Str(v))
			}
		}
		add(WCheckID, rec.CheckID)
		add(WDisposition, rec.Disposition)
		add(WDecisionReason, rec.Judgment.Reason)
		add(WDecisionCause, rec.Judgment.Cause)
		add(WNextAction, rec.Judgment.NextAction)
		add(graph.WDirection, rec.Direction)
		add(graph.WOperation, rec.Operation)
		add(WCheckedEvent, rec.Event)
		add(WActiveRevision, rec.ConfigurationDigest)
		for _, d := range rec.Judgment.DecidedBy {
			add(WDecidedBy, d.ID)
		}
		var msg *graph.Node
		if rec.Post != nil {
			msg = ix.byPost[rec.Post.AuthorAgentID+"\x00"+rec.Post.PostID]
			add(graph.WAuthorAgentID, rec.Post.AuthorAgentID)
			add(graph.WPostID, rec.Post.PostID)
		}
		if msg == nil && rec.Event != "" {
			msg = ix.byEvent[rec.Event]
		}
		if msg == nil && resultEventOf(rec.Event) != "" {
			msg = ix.byEvent[resultEventOf(rec.Event)] // a result's answer or question
		}
		if err := addCollectiveOverlay(n, l); err != nil {
			return err
		}
		if err := addProviderOverlay(n, l); err != nil {
			return err
		}
		res.Checks++
		if msg != nil {
			n.Add(graph.ProvUsed, graph.Ref(msg.ID))
			res.Linked++
		} else {
			res.Unlinked++
			n.Add(graph.WUnresolvedLink, graph.Str("message="+rec.Event))
		}
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, exitcode.New(exitcode.Of(err), fmt.Errorf("firewall audit overlay: %w", err), "the overlay reads only a complete, untampered snapshot; run 'witness firewall audit verify' on it")
	}
	snapshot = v.SnapshotID
	for _, n := range nodes {
		n.Add(WAuditSnapshotID, graph.Str(snapshot))
		if err := g.AddNode(n); err != nil {
			return nil, exitcode.New(exitcode.Tampered, fmt.Errorf("firewall audit overlay %s: %w", name, err), "a check reference appears twice in the snapshot")
		}
	}
	return res, nil
}

// MessagesOfGraph returns the agent messages of a graph as candidates, in
// event order (witness:seq). Recipients come back sorted (the graph keeps
// property values sorted).
func MessagesOfGraph(g *graph.Graph) ([]Candidate, map[string]string, error) {
	type item struct {
		seq int64
		c   Candidate
		iri string
	}
	var items []item
	for _, n := range g.OfType(graph.WAgentMessage) {
		seq, err := strconv.ParseInt(n.Value(graph.WSeq), 10, 64)
		if err != nil {
			return nil, nil, exitcode.New(exitcode.Tampered, fmt.Errorf("message %s: witness:seq %q: %w", n.ID, n.Value(graph.WSeq), err), "")
		}
		m := eventlog.Message{
			Direction: n.Value(graph.WDirection), Conversation: n.Value(graph.WConversation), Sender: n.Value(graph.WSender),
			Recipients: n.Values(graph.WRecipient), Text: n.Value(graph.WText), Operation: n.Value(graph.WOperation),
			AuthorAgentID: n.Value(graph.WAuthorAgentID), PostID: n.Value(graph.WPostID),
		}
		if len(m.Recipients) == 0 {
			m.Recipients = nil
		}
		if field, err := ValidateMessage(&m); err != nil {
			return nil, nil, exitcode.New(exitcode.Tampered, fmt.Errorf("message %s: %s: %w", n.ID, field, err), "the graph's message nodes lack fields the firewall needs (was it built with payloads?)")
		}
		// its event's time: the Runner's clock for deadlines (as evaluate's)
		items = append(items, item{seq: seq, c: Candidate{Event: n.Value(graph.WEventID), Message: m, ts: n.Value(graph.ProvGeneratedAtTime)}, iri: n.ID})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].seq < items[j].seq })
	out := make([]Candidate, 0, len(items))
	iris := map[string]string{}
	for _, it := range items {
		out = append(out, it.c)
		iris[it.c.Event] = it.iri
	}
	return out, iris, nil
}

// EvaluateCandidates runs the engine over candidates in order through the
// same Runner as evaluate (the daemon's history windows, collective tables
// and timing rules: one path for both) and returns the checks.
func EvaluateCandidates(eng *Engine, cs []Candidate) ([]*Check, error) {
	run := NewRunner(eng)
	run.Closes = map[string]time.Time{}
	for _, c := range cs {
		CloseTimes(run.Closes, c)
	}
	var out []*Check
	for _, c := range cs {
		chks, err := run.Step(c)
		if err != nil {
			return nil, err
		}
		out = append(out, chks...)
	}
	return out, nil
}

// WhatIf is a message-policy counterfactual source for replay: the policy
// in enforcement mode re-evaluated over the messages of a graph.
type WhatIf struct {
	Policy     *Policy // forced to enforcement
	Provider   Provider
	LocalAgent string
	Timestamp  string
}

// NewWhatIf prepares a what-if source for policy p (its mode is set to
// enforcement, as the question is what it would have withheld or refused).
func NewWhatIf(p *Policy, provider Provider, localAgent, ts string) *WhatIf {
	cp := *p
	cp.Mode = ModeEnforcement
	return &WhatIf{Policy: &cp, Provider: provider, LocalAgent: localAgent, Timestamp: ts}
}

// Name implements verdict.Source.
func (w *WhatIf) Name() string { return "firewall" }

func (w *WhatIf) checks(g *graph.Graph) ([]*Check, map[string]string, error) {
	cs, iris, err := MessagesOfGraph(g)
	if err != nil {
		return nil, nil, err
	}
	local := w.LocalAgent
	if local == "" {
		for _, c := range cs {
			if c.Message.Direction == Outgoing {
				local = c.Message.Sender
				break
			}
		}
	}
	if local == "" {
		for _, c := range cs {
			if len(c.Message.Recipients) == 1 {
				local = c.Message.Recipients[0]
				break
			}
		}
	}
	eng, err := NewEngine(w.Policy, w.Provider, local, w.Timestamp)
	if err != nil {
		return nil, nil, err
	}
	chks, err := EvaluateCandidates(eng, cs)
	return chks, iris, err
}

// Removals returns the IRIs of the graph's messages the policy would have
// withheld or refused, in event order.
func (w *WhatIf) Removals(g *graph.Graph) ([]string, error) {
	chks, iris, err := w.checks(g)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range chks {
		if c.Decision.Disposition != DispositionAdmitted {
			out = append(out, iris[c.Input.Candidate.Event])
		}
	}
	return out, nil
}

// Verdicts implements verdict.Source: the policy's disposition of each
// message of g, with the deciding rules and the reason.
func (w *WhatIf) Verdicts(g *graph.Graph) (map[string][]verdict.Node, error) {
	chks, iris, err := w.checks(g)
	if err != nil {
		return nil, err
	}
	out := map[string][]verdict.Node{}
	for _, c := range chks {
		ids := []string{}
		for _, d := range c.Decision.DecidedBy {
			ids = append(ids, d.ID)
		}
		reason := c.Decision.Reason + " (cause " + c.Decision.Cause
		if c.Decision.NextAction != "" {
			reason += ", next " + c.Decision.NextAction
		}
		reason += ", " + c.CheckID + ")"
		iri := iris[c.Input.Candidate.Event]
		out[iri] = append(out[iri], verdict.Node{Verdict: c.Decision.Disposition, Rule: strings.Join(ids, ","), Reason: reason})
	}
	return out, nil
}

// overlayCheck is what the overlay takes from a check record.
type overlayCheck struct {
	CheckID, Direction, Operation, Disposition string
	Post                                       *PostRef
	ConfigurationDigest, Event                 string
	Judgment                                   AuditJudgment
}

// readOverlayCheck reads the overlay's fields of a check record by exact
// member names (other members are the daemon's business and are skipped).
func readOverlayCheck(l AuditLine) (overlayCheck, error) {
	var perr error
	r := l.Reader(&perr)
	rec := overlayCheck{CheckID: r.String("checkId", false), Direction: r.String("direction", false),
		Operation: r.String("operation", false), Disposition: r.String("disposition", false)}
	if p := r.Value("post"); p != nil && p.Kind != jsontree.Null {
		if pr := r.Object("post", false); pr != nil {
			rec.Post = &PostRef{AuthorAgentID: pr.String("authorAgentId", false), PostID: pr.String("postId", false)}
		}
	}
	if in := r.Object("input", false); in != nil {
		rec.ConfigurationDigest = in.String("configurationDigest", false)
		if c := in.Object("candidate", false); c != nil {
			rec.Event = c.String("event", false)
		}
	}
	if j := r.Object("judgment", false); j != nil {
		rec.Judgment.Reason = j.String("reason", false)
		rec.Judgment.Cause = j.String("cause", false)
		rec.Judgment.NextAction = j.String("nextAction", false)
		j.Objects("decidedBy", false, func(i int, d *jsontree.ObjectReader) {
			rec.Judgment.DecidedBy = append(rec.Judgment.DecidedBy, DecidingRule{ID: d.String("id", false)})
		})
	}
	return rec, l.Err(perr)
}
