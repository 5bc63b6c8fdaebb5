package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// The --json results of the verbs that print a summary (graph, drift,
// capture, seal): one object each, documented in docs/formats/cli-json.md.
// Every object names its verb ("result") and its version ("v"); its keys
// are printed sorted (canonical JSON, indented), so the same run prints
// the same bytes.

// cliJSONVersion is the "v" of every result object.
const cliJSONVersion = 1

// printJSON writes v on standard output: canonical JSON (RFC 8785, keys
// sorted) indented by two spaces, then a newline.
func printJSON(a *app, v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("encode the JSON result: %w", err), "")
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("encode the JSON result: %w", err), "")
	}
	buf.WriteByte('\n')
	if _, err := a.stdout.Write(buf.Bytes()); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("write stdout: %w", err), "")
	}
	return nil
}

// graphResult is graph --json.
type graphResult struct {
	Result string   `json:"result"` // "graph"
	V      int      `json:"v"`
	Digest string   `json:"digest"` // sha256:<hex> of the canonical N-Quads
	Quads  int64    `json:"quads"`
	Format string   `json:"format"` // jsonld, nquads or dot
	Out    string   `json:"out"`
	Events []string `json:"events"`
}

func newGraphResult(o graphOptions, st graph.WriteStats) graphResult {
	return graphResult{Result: "graph", V: cliJSONVersion, Digest: "sha256:" + st.Digest, Quads: st.Quads,
		Format: o.Format, Out: o.Output.File(), Events: o.Events}
}

// driftResult is drift --json.
type driftResult struct {
	Result   string              `json:"result"` // "drift"
	V        int                 `json:"v"`
	Drift    bool                `json:"drift"`
	Drifting int                 `json:"drifting"` // reports that show drift
	Reports  []driftReportResult `json:"reports"`
}

type driftReportResult struct {
	File     string            `json:"file"`
	Cassette string            `json:"cassette"`
	Drift    bool              `json:"drift"`
	Complete bool              `json:"complete"` // the report has its end record
	Counts   drift.Counts      `json:"counts"`
	Cases    []driftCaseResult `json:"cases"`
}

type driftCaseResult struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome"` // pass, fail, skipped
	Type    string `json:"type"`
	Message string `json:"message"`
	Text    string `json:"text"`
}

func newDriftResult(v *drift.Verdict) driftResult {
	out := driftResult{Result: "drift", V: cliJSONVersion, Drift: v.Drift, Reports: []driftReportResult{}}
	for _, rv := range v.Reports {
		r := driftReportResult{File: rv.Report.File, Cassette: rv.Report.Header.Cassette.Name, Drift: rv.Drift,
			Complete: rv.Report.End != nil, Cases: []driftCaseResult{}}
		for _, e := range rv.Report.Entries {
			switch e.Status {
			case drift.Matched:
				r.Counts.Matched++
			case drift.Missed:
				r.Counts.Missed++
			case drift.NeverAsked:
				r.Counts.NeverAsked++
			case drift.AnswerDiffered:
				r.Counts.AnswerDiffered++
			}
		}
		for _, c := range rv.Cases {
			r.Cases = append(r.Cases, driftCaseResult{Name: c.Name, Outcome: string(c.Outcome), Type: c.Type, Message: c.Message, Text: c.Text})
		}
		if rv.Drift {
			out.Drifting++
		}
		out.Reports = append(out.Reports, r)
	}
	return out
}

// captureResult is capture --json.
type captureResult struct {
	Result        string              `json:"result"` // "capture"
	V             int                 `json:"v"`
	Server        captureServerResult `json:"server"`
	Tools         int                 `json:"tools"`
	ToolCalls     int                 `json:"tool_calls"`
	ToolErrors    int                 `json:"tool_errors"`
	Requests      int                 `json:"requests"`
	RequestErrors int                 `json:"request_errors"`
	Events        string              `json:"events"`
	EventCount    int64               `json:"event_count"`
	Cassette      string              `json:"cassette"`
	Records       int64               `json:"records"`
}

type captureServerResult struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocol_version"`
}

func newCaptureResult(res *capture.CaptureResult) captureResult {
	return captureResult{Result: "capture", V: cliJSONVersion,
		Server: captureServerResult{Name: res.Server.Name, Version: res.Server.Version, ProtocolVersion: res.Server.ProtocolVersion},
		Tools:  res.Tools, ToolCalls: res.Calls, ToolErrors: res.ToolError, Requests: res.Requests, RequestErrors: res.ReqError,
		Events: res.Events, EventCount: res.EventN, Cassette: res.Cassette, Records: res.Records}
}

// sealResult is seal --json.
type sealResult struct {
	Result    string `json:"result"` // "seal"
	V         int    `json:"v"`
	Out       string `json:"out"`
	SealRef   string `json:"seal_ref"`
	WitnessID string `json:"witness_id"`
	Tools     int    `json:"tools"`
	Algorithm string `json:"algorithm"`
	// KeyID is the keyring key that signed; "" for ATW_WITNESS_KEY.
	KeyID    string              `json:"key_id"`
	Envelope *sealEnvelopeResult `json:"envelope"` // null without --envelope
}

type sealEnvelopeResult struct {
	Out           string `json:"out"`
	PredicateType string `json:"predicate_type"`
}

// importResult is import --json.
type importResult struct {
	Result   string             `json:"result"` // "import"
	V        int                `json:"v"`
	File     string             `json:"file"`
	Source   string             `json:"source"` // atw-0.1.0-events or atw-0.1.0-cassette
	Out      string             `json:"out"`
	Events   int                `json:"events"`
	Paired   int                `json:"paired"`
	Orphans  []string           `json:"orphans"`
	Session  string             `json:"session"`
	SignedBy string             `json:"signed_by"` // key id; "" unsigned
	Links    []importLinkResult `json:"links"`
}

// importLinkResult is one pairing import made (or could not make).
type importLinkResult struct {
	Line       int64  `json:"line"`
	Event      string `json:"event"`
	Kind       string `json:"kind"`
	Name       string `json:"name"` // the tool, or the role of a model event
	ToolCall   string `json:"tool_call"`
	ModelInput string `json:"model_input"`
	Orphan     bool   `json:"orphan"`
}

// cosignResult is cosign --json.
type cosignResult struct {
	Result     string `json:"result"` // "cosign"
	V          int    `json:"v"`
	Seal       string `json:"seal"`
	Out        string `json:"out"`
	SealRef    string `json:"seal_ref"`
	KeyID      string `json:"key_id"`
	Algorithm  string `json:"algorithm"`
	Signatures int    `json:"signatures"` // the primary signature and the cosignatures
}
