package core

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// HostLogRef is one check reference found in a host's log and what the
// audit snapshot says about it.
type HostLogRef struct {
	Line    int64  `json:"line"`
	CheckID string `json:"checkId"`
	// Found: the snapshot holds a check record with this reference.
	Found       bool   `json:"found"`
	Sequence    int    `json:"sequence,omitempty"`
	Event       string `json:"event,omitempty"`
	Direction   string `json:"direction,omitempty"`
	Disposition string `json:"disposition,omitempty"`
	Reason      string `json:"reason,omitempty"`
	NextAction  string `json:"nextAction,omitempty"`
	// Finding says what does not agree ("" when the line agrees with the
	// record): an unknown reference, or a refusal text that does not name
	// the reason or next action the audit retains.
	Finding string `json:"finding,omitempty"`
}

// HostLogCorrelation is the result of correlating a host log with an
// audit snapshot.
type HostLogCorrelation struct {
	HostLog string       `json:"hostLog"`
	Audit   string       `json:"audit"`
	Refs    []HostLogRef `json:"refs"`
	// Malformed lists "line: token" for chk_ tokens that are not the
	// current reference format (chk_ and 64 lowercase hex).
	Malformed []string `json:"malformed,omitempty"`
	// Refusals counts the snapshot's refused sends; Unmentioned those of
	// them no host log line names (a host need not log every refusal).
	Refusals    int `json:"refusals"`
	Unmentioned int `json:"unmentioned"`
	Findings    int `json:"findings"`
}

// ScanCheckRefs returns the check references in one line of text, and
// the chk_ tokens that are not in the only accepted format ("chk_" and 64
// lowercase hex, not part of a longer word).
func ScanCheckRefs(line string) (refs, malformed []string) {
	for i := 0; ; {
		k := strings.Index(line[i:], "chk_")
		if k < 0 {
			return refs, malformed
		}
		start := i + k
		i = start + 4
		if start > 0 && isWordByte(line[start-1]) {
			continue // inside a longer word
		}
		end := i
		for end < len(line) && isWordByte(line[end]) {
			end++
		}
		tok := line[start:end]
		i = end
		if CheckIDPattern.MatchString(tok) {
			refs = append(refs, tok)
		} else {
			malformed = append(malformed, tok)
		}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// CorrelateHostLogFiles correlates the host log at hostPath with the
// audit snapshot at auditPath (which must be complete and untampered).
func CorrelateHostLogFiles(auditPath, hostPath string) (*HostLogCorrelation, error) {
	af, err := os.Open(auditPath)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path of the audit snapshot")
	}
	defer af.Close()
	hf, err := os.Open(hostPath)
	if err != nil {
		return nil, exitcode.Input("read host log", err, "check the path given to --host-log")
	}
	defer hf.Close()
	return CorrelateHostLog(af, auditPath, hf, hostPath)
}

// CorrelateHostLog finds every check reference in the host log (any text,
// one entry per line) and looks it up in the snapshot: a reference the
// snapshot does not hold, or a refusal line that does not name the
// reason and next action the snapshot retains, is a finding.
func CorrelateHostLog(audit io.Reader, auditName string, host io.Reader, hostName string) (*HostLogCorrelation, error) {
	recs := map[string]overlayCheck{}
	seq := map[string]int{}
	n := 0
	v, err := VerifyAudit(audit, auditName, func(l AuditLine) error {
		rec, err := readOverlayCheck(l)
		if err != nil {
			return err
		}
		n++
		if rec.CheckID != "" {
			if _, dup := recs[rec.CheckID]; !dup {
				recs[rec.CheckID], seq[rec.CheckID] = rec, n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, exitcode.New(exitcode.Of(err), fmt.Errorf("host log correlation: %w", err), "correlation reads only a complete, untampered snapshot; run 'witness firewall audit verify' on it")
	}
	res := &HostLogCorrelation{HostLog: hostName, Audit: auditName, Refs: []HostLogRef{}}
	mentioned := map[string]bool{}
	br := bufio.NewReaderSize(host, 64<<10)
	var lineNo int64
	for {
		line, _, tooLong, err := readAuditLine(br)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read host log %s: %w", hostName, err), "")
		}
		if line == nil && !tooLong {
			break
		}
		lineNo++
		if tooLong {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("%s:%d: line longer than %d bytes", hostName, lineNo, MaxAuditLineBytes), "give a host log with one entry per line")
		}
		text := string(line)
		refs, bad := ScanCheckRefs(text)
		for _, b := range bad {
			res.Malformed = append(res.Malformed, fmt.Sprintf("%d: %s", lineNo, b))
		}
		for _, id := range refs {
			r := HostLogRef{Line: lineNo, CheckID: id}
			rec, ok := recs[id]
			if !ok {
				r.Finding = "no check record with this reference in " + auditName
			} else {
				mentioned[id] = true
				r.Found, r.Sequence, r.Event, r.Direction, r.Disposition = true, seq[id], rec.Event, rec.Direction, rec.Disposition
				r.Reason, r.NextAction = rec.Judgment.Reason, rec.Judgment.NextAction
				if rec.Direction == Outgoing && rec.Disposition == DispositionRefused {
					want := SendReasonText(rec.Judgment.Reason)
					switch {
					case want != "" && !strings.Contains(text, want):
						r.Finding = fmt.Sprintf("the line does not name the reason the audit retains (%s)", want)
					case rec.Judgment.NextAction != "" && !strings.Contains(text, rec.Judgment.NextAction):
						r.Finding = fmt.Sprintf("the line does not name the next action the audit retains (%s)", rec.Judgment.NextAction)
					}
				}
			}
			if r.Finding != "" {
				res.Findings++
			}
			res.Refs = append(res.Refs, r)
		}
	}
	for id, rec := range recs {
		if rec.Direction == Outgoing && rec.Disposition == DispositionRefused {
			res.Refusals++
			if !mentioned[id] {
				res.Unmentioned++
			}
		}
	}
	return res, nil
}

// WriteHostLogCorrelation writes a correlation as text, one line per
// reference found, then the totals.
func WriteHostLogCorrelation(w io.Writer, c *HostLogCorrelation) error {
	var b strings.Builder
	for _, r := range c.Refs {
		if !r.Found {
			fmt.Fprintf(&b, "%s:%d: %s: %s\n", c.HostLog, r.Line, r.CheckID, r.Finding)
			continue
		}
		fmt.Fprintf(&b, "%s:%d: %s: check %d, event %s, %s %s reason=%s next=%s", c.HostLog, r.Line, r.CheckID, r.Sequence, r.Event, r.Direction, r.Disposition, r.Reason, orDash(r.NextAction))
		if r.Finding != "" {
			fmt.Fprintf(&b, ": %s", r.Finding)
		}
		b.WriteString("\n")
	}
	for _, m := range c.Malformed {
		fmt.Fprintf(&b, "%s:%s: not a check reference in the current format (chk_ and 64 lowercase hex)\n", c.HostLog, m)
	}
	fmt.Fprintf(&b, "correlated %d references (%d findings); %d of %d refused sends in %s are not named in the host log\n",
		len(c.Refs), c.Findings, c.Unmentioned, c.Refusals, c.Audit)
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
