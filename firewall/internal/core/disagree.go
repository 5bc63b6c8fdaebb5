package core

import (
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// RecordedCheck is what a comparison reads of an audit's check record: its
// decision and the inputs that can make a decision differ.
type RecordedCheck struct {
	Line                  int64
	CheckID               string
	Event                 string
	Direction             string
	Operation             string
	Disposition           string
	CollectiveFailure     string
	Reason                string
	DecidedBy             []string
	ConfigurationDigest   string
	Candidate             string // base64, as recorded
	History               []string
	HistoryMarks          map[string]string
	HistorySHA256         string
	EvidenceGaps          []string
	EarlierHistoryOmitted bool
	Sender, Conversation  string
	Text                  string
	PostAuthor, PostID    string
	LocalAgent            string
	CapturedAt            string
}

// ReadRecordedChecks reads the check records of a complete snapshot; an
// incomplete one is refused (exit 4), a tampered one exit 3.
func ReadRecordedChecks(r io.Reader, name string) ([]RecordedCheck, *AuditVerdict, error) {
	var out []RecordedCheck
	v, err := VerifyAudit(r, name, func(l AuditLine) error {
		rc, err := readRecordedCheck(l)
		if err != nil {
			return err
		}
		out = append(out, rc)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := v.Err(); err != nil {
		return nil, v, exitcode.New(exitcode.Of(err), fmt.Errorf("firewall audit %s: %w", name, err), "run 'witness firewall audit verify' on it")
	}
	return out, v, nil
}

func readRecordedCheck(l AuditLine) (RecordedCheck, error) {
	var perr error
	r := l.Reader(&perr)
	rc := RecordedCheck{Line: l.No, CheckID: r.String("checkId", false), Direction: r.String("direction", false),
		Operation: r.String("operation", false), Disposition: r.String("disposition", false),
		CollectiveFailure: r.String("collectiveFailure", false), Candidate: r.String("candidate", false)}
	if p := r.Value("post"); p != nil && p.Kind == jsontree.Object {
		if pr := r.Object("post", false); pr != nil {
			rc.PostAuthor, rc.PostID = pr.String("authorAgentId", false), pr.String("postId", false)
		}
	}
	if j := r.Object("judgment", false); j != nil {
		rc.Reason = j.String("reason", false)
		j.Objects("decidedBy", false, func(i int, d *jsontree.ObjectReader) { rc.DecidedBy = append(rc.DecidedBy, d.String("id", false)) })
	}
	if in := r.Object("input", false); in != nil {
		rc.ConfigurationDigest = in.String("configurationDigest", false)
		rc.LocalAgent = in.String("localAgent", false)
		rc.CapturedAt = in.String("capturedAt", false)
		rc.History = in.Strings("history", false)
		rc.HistorySHA256 = in.String("historySha256", false)
		rc.EvidenceGaps = in.Strings("evidenceGaps", false)
		rc.EarlierHistoryOmitted = in.Bool("earlierHistoryOmitted", false)
		if mv := in.Value("historyMarks"); mv != nil && mv.Kind == jsontree.Object {
			rc.HistoryMarks = map[string]string{}
			for _, m := range mv.Obj {
				if m.Val != nil && m.Val.Kind == jsontree.String {
					rc.HistoryMarks[m.Key] = m.Val.Str
				}
			}
		}
		if c := in.Object("candidate", false); c != nil {
			rc.Event = c.String("event", false)
			if m := c.Object("message", false); m != nil {
				rc.Sender, rc.Conversation, rc.Text = m.String("sender", false), m.String("conversation", false), m.String("text", false)
			}
		}
	}
	return rc, l.Err(perr)
}

// Disagreement is a check whose recorded decision and re-evaluation differ,
// with the input that made the difference.
type Disagreement struct {
	Event       string `json:"event"`
	Recorded    string `json:"recorded"`    // disposition/reason as recorded ("missing": no record)
	Reevaluated string `json:"reevaluated"` // disposition/reason re-evaluated ("missing": not checked)
	Input       string `json:"input"`       // configurationDigest, candidate, history, historyMarks, evidenceGaps, earlierHistoryOmitted, collectiveFailure, provider
	Detail      string `json:"detail"`
}

func (d Disagreement) String() string {
	return fmt.Sprintf("%s: recorded %s, re-evaluated %s: %s: %s", d.Event, d.Recorded, d.Reevaluated, d.Input, d.Detail)
}

func outcomeOf(disposition, reason, failure string) string {
	s := disposition + "/" + reason
	if failure != "" {
		s += "/" + failure
	}
	return s
}

// Disagreements compares the recorded checks of an audit with a
// re-evaluation's checks, by checked event, and for each whose outcome
// differs names the first input that differs, in this order: the
// installation (configurationDigest), the candidate, the history window
// (which record one side has and the other lacks), the history marks
// (runtime-visible, assessor, withheld), the evidence gaps,
// earlierHistoryOmitted; when every input is equal, the decision provider
// (the judgments differ: a recorded answer missing or different). A check
// on one side only is a disagreement too.
func Disagreements(recorded []RecordedCheck, checks []*Check) []Disagreement {
	var out []Disagreement
	rec := map[string]RecordedCheck{}
	for _, r := range recorded {
		rec[r.Event] = r
	}
	seen := map[string]bool{}
	for _, c := range checks {
		ev := c.Input.Candidate.Event
		seen[ev] = true
		d := c.Decision
		got := outcomeOf(d.Disposition, d.Reason, d.CollectiveFailure)
		r, ok := rec[ev]
		if !ok {
			out = append(out, Disagreement{Event: ev, Recorded: "missing", Reevaluated: got, Input: "record", Detail: "the audit has no check of this event"})
			continue
		}
		want := outcomeOf(r.Disposition, r.Reason, r.CollectiveFailure)
		if want == got && strings.Join(r.DecidedBy, ",") == strings.Join(decidedIDs(d), ",") {
			continue
		}
		dis := Disagreement{Event: ev, Recorded: want, Reevaluated: got}
		dis.Input, dis.Detail = firstDifference(r, c)
		out = append(out, dis)
	}
	for _, r := range recorded {
		if !seen[r.Event] {
			out = append(out, Disagreement{Event: r.Event, Recorded: outcomeOf(r.Disposition, r.Reason, r.CollectiveFailure), Reevaluated: "missing",
				Input: "record", Detail: "the re-evaluation made no check of this event (not in the log, or a step the tables do not check)"})
		}
	}
	return out
}

func decidedIDs(d Decision) []string {
	var out []string
	for _, r := range d.DecidedBy {
		out = append(out, r.ID)
	}
	return out
}

func firstDifference(r RecordedCheck, c *Check) (string, string) {
	in := c.Input
	if r.ConfigurationDigest != in.ConfigurationDigest {
		return "configurationDigest", fmt.Sprintf("recorded installation %s, re-evaluated %s", short(r.ConfigurationDigest), short(in.ConfigurationDigest))
	}
	if r.Sender != in.Candidate.Message.Sender || r.Text != in.Candidate.Message.Text || r.Conversation != in.Candidate.Message.Conversation {
		return "candidate", "the checked message differs (sender, conversation or text)"
	}
	rh := map[string]bool{}
	for _, h := range r.History {
		rh[h] = true
	}
	ch := map[string]bool{}
	for _, h := range in.History {
		ch[h] = true
		if !rh[h] {
			return "history", fmt.Sprintf("record %s is in the re-evaluated window only", h)
		}
	}
	for _, h := range r.History {
		if !ch[h] {
			return "history", fmt.Sprintf("record %s is in the recorded window only", h)
		}
	}
	if r.HistorySHA256 != "" && r.HistorySHA256 != in.HistorySHA256 {
		return "history", "the same records with different content (historySha256 differs)"
	}
	for _, h := range in.History {
		a, b := markOf(r.HistoryMarks, h), markOf(in.HistoryMarks, h)
		if a != b {
			return "historyMarks", fmt.Sprintf("record %s: recorded %s, re-evaluated %s", h, a, b)
		}
	}
	if strings.Join(r.EvidenceGaps, "\n") != strings.Join(in.EvidenceGaps, "\n") {
		return "evidenceGaps", fmt.Sprintf("recorded %q, re-evaluated %q", r.EvidenceGaps, in.EvidenceGaps)
	}
	if r.EarlierHistoryOmitted != in.EarlierHistoryOmitted {
		return "earlierHistoryOmitted", fmt.Sprintf("recorded %v, re-evaluated %v", r.EarlierHistoryOmitted, in.EarlierHistoryOmitted)
	}
	if r.CollectiveFailure != c.Decision.CollectiveFailure {
		return "collectiveFailure", fmt.Sprintf("timing: recorded %q, re-evaluated %q (the close, claim or deadline evidence differs)", r.CollectiveFailure, c.Decision.CollectiveFailure)
	}
	return "provider", "every input is equal: the decision provider's judgments differ (a recorded answer missing or different)"
}

func markOf(m map[string]string, ev string) string {
	if v, ok := m[ev]; ok {
		return v
	}
	return VisibleRuntime
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
