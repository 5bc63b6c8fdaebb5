package serve

import (
	"fmt"

	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Header returns the drift report header of a serve of s with o.
func (s *Script) Header(o Options, allowRedacted bool) drift.Header {
	return drift.Header{
		Cassette: drift.Cassette{Name: s.Name, SHA256: s.SHA256},
		Serve: drift.ServeOptions{Transport: "stdio", RequireAll: o.RequireAll, AllowRedacted: allowRedacted,
			AnswerTimeout: o.AnswerTimeout.String()},
		Requests: s.Requests(),
	}
}

// report writes one entry to the drift report, if there is one.
func (ss *serving) report(e drift.Entry) {
	if ss.o.Report == nil || ss.reportFailed {
		return
	}
	if err := ss.o.Report.Entry(e); err != nil {
		ss.reportFailed = true
		ss.say("warning: the drift report can no longer be written: %v", err)
	}
}

// finishReport writes the end record.
func (ss *serving) finishReport(end drift.End) {
	if ss.o.Report == nil || ss.reportFailed {
		return
	}
	if err := ss.o.Report.Close(end); err != nil {
		ss.reportFailed = true
		ss.say("warning: the drift report can no longer be written: %v", err)
	}
}

// reportErr is the exit-5 error of a report that could not be written.
func (ss *serving) reportErr() error {
	if ss.o.Report == nil {
		return nil
	}
	if err := ss.o.Report.Err(); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("serve: write the drift report: %w", err), "check the disk and the path given to --report")
	}
	return nil
}

// turnOf describes the recorded host message whose turn sent a server
// request: nil for the turn before the first host message.
func turnOf(e *entry) *drift.Message {
	if e == nil || e.kind == "" {
		return nil
	}
	return drift.Describe(e.key.Method, e.key.Params, e.line)
}

// askOf describes a recorded server request.
func askOf(a *ask) *drift.Message {
	m := drift.Describe(a.key.Method, a.key.Params, a.line)
	if m.Method == "" {
		m.Method = a.method
	}
	return m
}
