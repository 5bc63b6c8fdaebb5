package drift

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/junit"
)

// Options configure Judge.
type Options struct {
	// AllowUnused makes never_asked entries (recorded requests the run
	// did not make, server requests it left unanswered) no drift: they are
	// shown as skipped. By default the run must replay the whole recording.
	AllowUnused bool
}

// Outcome is the verdict on one entry.
type Outcome string

// The outcomes of a case.
const (
	pass    Outcome = "pass"
	fail    Outcome = "fail"
	skipped Outcome = "skipped" // never_asked with AllowUnused
)

// Case is one verdict: an entry, or the check that a report is complete.
type Case struct {
	Name    string
	Outcome Outcome
	Type    string // the entry's status, or "incomplete_report"
	Message string // one line
	Text    string // the details (nearest recording, answers, diff)
}

// ReportVerdict is the verdict on one report.
type ReportVerdict struct {
	Report *Report
	Cases  []Case
	Drift  bool
}

// Verdict is the one verdict over several reports.
type Verdict struct {
	Reports []*ReportVerdict
	// Drift is true when any report shows drift: an entry that is not
	// matched (never_asked only without AllowUnused), a report cut short,
	// or a serve that could not start.
	Drift bool
}

// Judge turns reports into one verdict. Each report is judged alone: a
// report belongs to one serve process, which answered from one cassette.
func Judge(reports []*Report, o Options) *Verdict {
	v := &Verdict{}
	for _, r := range reports {
		rv := judge(r, o)
		v.Drift = v.Drift || rv.Drift
		v.Reports = append(v.Reports, rv)
	}
	return v
}

func judge(r *Report, o Options) *ReportVerdict {
	rv := &ReportVerdict{Report: r}
	add := func(c Case) {
		if c.Outcome == fail {
			rv.Drift = true
		}
		rv.Cases = append(rv.Cases, c)
	}
	complete := Case{Name: "serve stopped cleanly and wrote its whole report", Outcome: pass, Type: "complete_report"}
	switch {
	case r.End == nil:
		complete.Outcome, complete.Type = fail, "incomplete_report"
		complete.Message = "incomplete report: " + r.Cut
		complete.Text = "A report without its end record does not show what the run did not ask for. " +
			"Let the host stop serve by closing its input or with SIGTERM, not SIGKILL."
	case r.End.Stop == StopFailed:
		complete.Outcome, complete.Type = fail, "serve_failed"
		complete.Message = "serve could not start: " + r.End.Error
	default:
		complete.Message = "stopped: " + stopText(r.End)
	}
	add(complete)
	for _, e := range r.Entries {
		add(entryCase(e, o))
	}
	return rv
}

func stopText(e *End) string {
	switch e.Stop {
	case StopEOF:
		return "the host closed serve's input"
	case StopSignal:
		return "the host stopped serve with " + e.Signal
	case StopStdout:
		return "the host stopped reading serve's output: " + e.Error
	case StopStdin:
		return "serve's input failed: " + e.Error
	case StopExitAfter:
		return "serve answered the --exit-after number of requests"
	}
	return string(e.Stop)
}

func entryCase(e Entry, o Options) Case {
	c := Case{Type: string(e.Status), Outcome: fail}
	var text []string
	switch e.Kind {
	case KindRequest:
		if e.Status == Missed {
			c.Name = fmt.Sprintf("asked %s (not in the recording, id %s)", e.Incoming.describe(), e.ID)
		} else {
			c.Name = "recorded " + e.Recorded.where()
		}
	case KindAnswer:
		c.Name = "host answer to recorded " + e.Recorded.where()
		if e.Turn != nil {
			c.Name += " in the turn of " + e.Turn.describe()
		}
	default:
		c.Name = fmt.Sprintf("host line %d that is not a JSON-RPC request", e.N)
	}
	switch e.Status {
	case Matched:
		c.Outcome = pass
	case NeverAsked:
		if o.AllowUnused {
			c.Outcome = skipped
		}
	}
	c.Message = e.Reason
	if c.Message == "" && e.Status == Matched {
		c.Message = "matched"
	}
	msg := func(label string, m *Message) {
		if m == nil {
			return
		}
		s := label + ": " + m.where()
		if m.Preview != "" {
			s += "\n  params: " + m.Preview
		}
		if m.ParamsSHA256 != "" {
			s += "\n  params sha256: " + m.ParamsSHA256
		}
		text = append(text, s)
	}
	if c.Outcome != pass {
		msg("recorded", e.Recorded)
		msg("incoming", e.Incoming)
		msg("nearest recorded request", e.Nearest)
		if e.RecordedAnswer != "" {
			text = append(text, "recorded answer: "+e.RecordedAnswer)
		}
		if e.HostAnswer != "" {
			text = append(text, "host answer:     "+e.HostAnswer)
		}
		if e.Diff != "" {
			text = append(text, "diff (-recorded +incoming):\n"+e.Diff)
		}
	}
	c.Text = strings.Join(text, "\n")
	return c
}

// WriteText writes the verdict for a person: one line per report, the
// failing cases with their details, and the verdict.
func (v *Verdict) WriteText(w io.Writer) error {
	var b strings.Builder
	drifting := 0
	for _, rv := range v.Reports {
		r := rv.Report
		state := "no drift"
		if rv.Drift {
			state = "DRIFT"
			drifting++
		}
		var counts Counts
		for _, e := range r.Entries {
			counts.add(e.Status)
		}
		fmt.Fprintf(&b, "%s (cassette %s): %s: %d matched, %d missed, %d never asked, %d host answers differed\n",
			r.File, r.Header.Cassette.Name, state, counts.Matched, counts.Missed, counts.NeverAsked, counts.AnswerDiffered)
		for _, c := range rv.Cases {
			if c.Outcome != fail {
				continue
			}
			fmt.Fprintf(&b, "  FAIL %s: %s\n", c.Name, c.Message)
			if c.Text != "" {
				b.WriteString("    " + strings.ReplaceAll(c.Text, "\n", "\n    ") + "\n")
			}
		}
	}
	if v.Drift {
		fmt.Fprintf(&b, "drift: %d of %d report(s) show drift\n", drifting, len(v.Reports))
	} else {
		fmt.Fprintf(&b, "no drift: %d report(s)\n", len(v.Reports))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJUnit writes the verdict as JUnit XML: one testsuite per report,
// one testcase per entry (matched passes; missed, answer_differed and
// never_asked fail with the details and the diff in the failure text;
// never_asked is skipped with AllowUnused) and one for the report's
// completeness.
func (v *Verdict) WriteJUnit(w io.Writer) error {
	out := junit.Suites{Name: "witness drift"}
	for i, rv := range v.Reports {
		r := rv.Report
		class := "witness.drift." + strings.TrimSuffix(filepath.Base(r.Header.Cassette.Name), filepath.Ext(r.Header.Cassette.Name))
		s := junit.Suite{
			Name: fmt.Sprintf("drift %s (report %s)", r.Header.Cassette.Name, r.File),
			Properties: []junit.Property{
				{Name: "report", Value: r.File},
				{Name: "report_index", Value: strconv.Itoa(i + 1)},
				{Name: "cassette", Value: r.Header.Cassette.Name},
				{Name: "cassette_sha256", Value: r.Header.Cassette.SHA256},
				{Name: "transport", Value: r.Header.Serve.Transport},
				{Name: "require_all", Value: strconv.FormatBool(r.Header.Serve.RequireAll)},
			},
		}
		for _, c := range rv.Cases {
			jc := junit.Case{Name: c.Name, Classname: class}
			switch c.Outcome {
			case fail:
				jc.Failure = &junit.Message{Message: c.Message, Type: c.Type, Text: c.Text}
				s.Failures++
			case skipped:
				jc.Skipped = &junit.Message{Message: "never asked; allowed by --allow-unused", Type: c.Type}
				s.Skipped++
			}
			s.Tests++
			s.Cases = append(s.Cases, jc)
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Suites = append(out.Suites, s)
	}
	return junit.Write(w, out)
}
