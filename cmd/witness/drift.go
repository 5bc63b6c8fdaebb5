package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

type driftOptions struct {
	Reports     []string
	JUnit       string
	AllowUnused bool
	Force       bool
	JSON        bool
}

func newDriftCmd(a *app) *cobra.Command {
	var o driftOptions
	c := &cobra.Command{
		Use:   "drift REPORT... [--junit FILE]",
		Short: "Turn the drift reports of 'witness serve --report' into one CI verdict",
		Long: `drift reads the reports that 'witness serve --report FILE' writes (one per
serve process: one per recorded server, say) and gives one verdict, whatever
the host that launched serve did with serve's exit status or its stderr.

The run drifted from the recordings when, in any report:
  - the host asked a request the cassette has no answer for (missed: the
    nearest recorded request and the diff are shown);
  - the host answered a recorded server request (sampling, elicitation,
    roots/list, ping) otherwise than recorded, or not at all;
  - a recorded request was never asked for (never_asked; with
    --allow-unused these are skipped instead);
  - the report is incomplete: serve did not stop cleanly (it was killed
    with SIGKILL, or its report could not be finished), or serve could not
    start.

The verdict is printed on stdout (--json: as one JSON object, each report's
counts and cases, docs/formats/cli-json.md); --junit FILE also writes it as JUnit XML
(one testsuite per report, one testcase per recorded request, missed
request and host answer, and one for the report's completeness).

Exit status: 0 no drift, 1 drift, 2 usage (a file that is not a drift
report included), 3 a report that was changed or broken, 5 an I/O error.`,
		Example: `  witness drift out/drift-echo.jsonl out/drift-files.jsonl --junit out/drift.xml
  witness drift out/drift-echo.jsonl --allow-unused`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Reports = args
			return runDrift(a, o)
		},
	}
	c.Flags().StringVar(&o.JUnit, "junit", "", "also write the verdict as JUnit XML to this file")
	c.Flags().BoolVar(&o.AllowUnused, "allow-unused", false, "recorded requests never asked for (and server requests never answered) are no drift: skipped")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the verdict as JSON: each report's counts and cases")
	addForceFlag(c, &o.Force)
	return c
}

func runDrift(a *app, o driftOptions) error {
	rules := a.writeRules("--junit", o.Force, o.Reports...)
	if o.JUnit != "" {
		if err := atomicfile.Check(o.JUnit, rules); err != nil {
			return err
		}
	}
	var reports []*drift.Report
	for _, path := range o.Reports {
		r, err := drift.ReadFile(path)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	v := drift.Judge(reports, drift.Options{AllowUnused: o.AllowUnused})
	if o.JUnit != "" {
		var buf bytes.Buffer
		if err := v.WriteJUnit(&buf); err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("--junit %s: %w", o.JUnit, err), "")
		}
		if err := atomicfile.Write(o.JUnit, buf.Bytes(), rules); err != nil {
			return err
		}
	}
	if o.JSON {
		if err := printJSON(a, newDriftResult(v)); err != nil {
			return err
		}
	} else if err := v.WriteText(a.stdout); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("write stdout: %w", err), "")
	}
	if v.Drift {
		return exitWith(exitcode.Violation)
	}
	return nil
}
