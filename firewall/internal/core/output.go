package core

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
)

// CheckLine renders one check as a line of text: event, direction,
// operation, disposition, reason, decidedBy, cause, next action, the
// collective failure when there is one (failure=deadline-passed), check id.
func CheckLine(c *Check) string {
	d := c.Decision
	ids := []string{}
	for _, r := range d.DecidedBy {
		ids = append(ids, r.ID)
	}
	by := "-"
	if len(ids) > 0 {
		by = strings.Join(ids, ",")
	}
	next := d.NextAction
	if next == "" {
		next = "-"
	}
	if d.CollectiveFailure != "" {
		next += " failure=" + d.CollectiveFailure
	}
	return fmt.Sprintf("%s %s %s %s reason=%s decidedBy=%s cause=%s next=%s %s",
		c.Input.Candidate.Event, c.Input.Direction, c.Input.Candidate.Message.Operation, d.Disposition, d.Reason, by, d.Cause, next, c.CheckID)
}

// WriteSummary writes the totals of an evaluation as text.
func WriteSummary(w io.Writer, s *Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "checks: %d (mode %s, our agent %s)\n", s.Checks, s.Mode, s.LocalAgent)
	for _, k := range sortedCounts(s.Dispositions) {
		fmt.Fprintf(&b, "  %s: %d\n", k, s.Dispositions[k])
	}
	fmt.Fprintf(&b, "reasons:")
	for _, k := range sortedCounts(s.Reasons) {
		fmt.Fprintf(&b, " %s=%d", k, s.Reasons[k])
	}
	fmt.Fprintf(&b, "\nactiveRevision: %s\nsnapshotId: %s\n", s.ActiveRevision, s.SnapshotID)
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedCounts(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DescribePolicy writes a human summary of a decoded policy and its digest.
func DescribePolicy(w io.Writer, name string, p *Policy) error {
	rev, err := p.ActiveRevision()
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %s\nformat: %s\nmode: %s\n", name, p.Format, p.Mode)
	chain := func(dir string, ms []MiddlewareSpec) {
		fmt.Fprintf(&b, "%s:", dir)
		if len(ms) == 0 {
			b.WriteString(" (none)")
		}
		for _, m := range ms {
			def := builtinMiddleware(m, dir, p)
			ids := []string{}
			for _, r := range def.Rules {
				ids = append(ids, r.ID)
			}
			fmt.Fprintf(&b, " %s[%s]", def.ID, strings.Join(ids, ","))
		}
		b.WriteString("\n")
	}
	chain(Incoming, p.Incoming)
	chain(Outgoing, p.Outgoing)
	if p.English == nil {
		b.WriteString("english: (none)\n")
	} else {
		fmt.Fprintf(&b, "english: %d fixed, %d editable rules\n", len(p.English.FixedRules), len(p.English.InitialRules))
	}
	if p.DecisionProvider == nil {
		b.WriteString("decisionProvider: (none)\n")
	} else if p.DecisionProvider.Model != "" {
		fmt.Fprintf(&b, "decisionProvider: %s %s\n", p.DecisionProvider.Kind, p.DecisionProvider.Model)
	} else {
		fmt.Fprintf(&b, "decisionProvider: %s\n", p.DecisionProvider.Kind)
	}
	fmt.Fprintf(&b, "maximumHistoryRecords: %d\nmaximumConcurrentChecks: %d\nactiveRevision: %s\n", p.MaximumHistoryRecords, p.MaximumConcurrentChecks, rev)
	_, err = io.WriteString(w, b.String())
	return err
}

// WriteJSONLine writes v as indented JSON and a newline.
func WriteJSONLine(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// AuditFile returns o with the rules an audit snapshot (or a derived log)
// is published under, as the seed publishes a snapshot: staged in
// "<path>.partial", created exclusively (a stale one left by an
// interrupted run is refused), mode 0600. Write it with atomicfile.Publish,
// which keeps the evidence rules of o (never over an input, never through
// a symlink, an existing file only with o.Force) and removes the staging
// file on failure.
func AuditFile(path string, o atomicfile.Options) atomicfile.Options {
	o.Staging = path + ".partial"
	o.Perm = 0o600
	return o
}
