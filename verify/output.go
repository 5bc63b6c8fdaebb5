package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/internal/junit"
	"github.com/agent-trace-witness/witness/internal/version"
)

// location returns "file:line" or "file" for a finding.
func (r *Report) location(f Finding) string {
	file := f.File
	if file == "" {
		if f.Line > 0 || f.EventID != "" {
			file = r.Evidence.File
		} else {
			file = r.Seal.File
		}
	}
	if file == "" {
		file = "-"
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", file, f.Line)
	}
	return file
}

// refs returns the " [event e4, rpc 3, seal tools[0]]" suffix of a finding.
func refs(f Finding) string {
	var parts []string
	if f.EventID != "" {
		parts = append(parts, "event "+f.EventID)
	}
	if len(f.RPCID) > 0 {
		parts = append(parts, "rpc "+string(f.RPCID))
	}
	if f.SealClause != "" {
		parts = append(parts, "seal "+f.SealClause)
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

func plural(n int, one string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// WriteText writes the human report: one line per finding, then the verdict
// line. Unless verbose, the notices of two or more checks that could not
// run (code not-checkable) are summed up in one line, where the first of
// them would be, naming the checks (docs/design/progress.md); the machine
// formats always list them.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	var b bytes.Buffer
	summary, summed := r.notCheckableSummary(verbose)
	for _, f := range r.Findings {
		if summed && f.Code == "not-checkable" {
			b.WriteString(summary)
			summary = ""
			continue
		}
		fmt.Fprintf(&b, "%s: %s: %s: %s%s\n", r.location(f), f.Severity, f.Code, f.Message, refs(f))
		for i, c := range f.Chain {
			arrow := "  <- "
			if i == 0 {
				arrow = "     "
			}
			fmt.Fprintf(&b, "%s%s\n", arrow, c)
		}
	}
	b.WriteString(r.VerdictLine())
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// notCheckableSummary is the line that stands for the not-checkable
// notices in the text report, and whether there is one: not when verbose,
// nor for fewer than two checks.
func (r *Report) notCheckableSummary(verbose bool) (string, bool) {
	if verbose {
		return "", false
	}
	var checks []string
	seen := map[string]bool{}
	loc := ""
	for _, f := range r.Findings {
		if f.Code != "not-checkable" || seen[f.Check] {
			continue
		}
		if loc == "" {
			loc = r.location(f)
		}
		seen[f.Check] = true
		checks = append(checks, f.Check)
	}
	if len(checks) < 2 {
		return "", false
	}
	return fmt.Sprintf("%s: notice: not-checkable: %d checks not checkable: %s; --verbose lists them with their reasons\n",
		loc, len(checks), strings.Join(checks, ", ")), true
}

// VerdictLine returns the verdict line of the text report (no newline).
// Besides the verdict and the counts it says what the evidence cannot
// prove: a recorded failure, events imported rather than observed, a graph
// that could not be authenticated, and a violation that a worse verdict
// outranks.
func (r *Report) VerdictLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s (exit %d): %s, %s, %s", r.Verdict, r.ExitCode,
		plural(r.Summary.Errors, "error"), plural(r.Summary.Warnings, "warning"), plural(r.Summary.Notices, "notice"))
	for _, q := range r.Qualifiers {
		b.WriteString("; ")
		b.WriteString(q)
	}
	if r.Seal.Digest != "" {
		fmt.Fprintf(&b, "; seal %s", r.Seal.Digest)
	}
	if r.Evidence.GraphDigest != "" {
		fmt.Fprintf(&b, "; graph sha256:%s", r.Evidence.GraphDigest)
	}
	return b.String()
}

// qualifiers returns the clauses of the verdict line that say what the
// evidence cannot prove, in a fixed order (Report.Qualifiers).
func (r *Report) qualifiers() []string {
	var out []string
	if r.integrityOnly {
		out = append(out, IntegrityOnly)
	}
	if fs := r.Evidence.Failures; len(fs) > 0 {
		q := "recording failed: " + fs[0].Failure
		if len(fs) > 1 {
			q += fmt.Sprintf(" (and %d more)", len(fs)-1)
		}
		out = append(out, q)
	}
	if r.Verdict == Unauthenticated {
		for _, f := range r.Findings {
			if f.Code == "graph-unauthenticated" {
				out = append(out, "unauthenticated: a graph alone carries no chain or signature")
				break
			}
		}
		for _, f := range r.Findings {
			if f.Class == classUnauthenticated && f.Code != "graph-unauthenticated" && f.Check != checkAnchor {
				out = append(out, "unauthenticated: signed by a key the keyring and trust file given do not hold (cannot check)")
				break
			}
		}
		for _, f := range r.Findings {
			if f.Class == classUnauthenticated && f.Check == checkAnchor {
				out = append(out, "unauthenticated: the transparency log's key is not pinned (--log-key, or log_keys in the --trust file)")
				break
			}
		}
	}
	if r.Evidence.imported() {
		q := "imported, not observed"
		if from := r.Evidence.ImportedFrom; from != "" {
			q += " (converted from " + from + ")"
		}
		if n, all := r.Evidence.Sources["imported"], r.sourceTotal(); n < all {
			unit := "lines"
			if r.Evidence.Kind == "graph" {
				unit = "events"
			}
			q += fmt.Sprintf(": %d of %d %s", n, all, unit)
		}
		out = append(out, q)
	}
	if r.Verdict.rank() > Violation.rank() && r.Verdict != Tampered {
		if n := r.classCount(classViolation); n > 0 {
			out = append(out, fmt.Sprintf("also violation: %s", plural(n, "finding")))
		}
	}
	return out
}

// sourceTotal is the number of events counted in Evidence.Sources.
func (r *Report) sourceTotal() int64 {
	var n int64
	for _, c := range r.Evidence.Sources {
		n += c
	}
	return n
}

// classCount counts the findings of one class.
func (r *Report) classCount(c Class) int {
	n := 0
	for _, f := range r.Findings {
		if f.Class == c {
			n++
		}
	}
	return n
}

// WriteJSON writes the report as indented JSON (docs/formats/verdict.md).
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// SARIF 2.1.0 structures: only the properties witness fills.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Artifacts   []sarifArtifact   `json:"artifacts,omitempty"`
	Results     []sarifResult     `json:"results"`
	Properties  map[string]any    `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifMessage   `json:"shortDescription"`
	FullDescription      sarifMessage   `json:"fullDescription"`
	DefaultConfiguration sarifRuleConf  `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool `json:"executionSuccessful"`
	ExitCode            int  `json:"exitCode"`
}

type sarifArtifact struct {
	Location sarifArtifactLocation `json:"location"`
}

type sarifArtifactLocation struct {
	URI   string `json:"uri"`
	Index *int   `json:"index,omitempty"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Kind                string            `json:"kind,omitempty"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifRegion struct {
	StartLine int64 `json:"startLine"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
	Kind               string `json:"kind,omitempty"`
}

// sarifURI turns a file name into a SARIF artifact URI (an RFC 3986
// URI reference): a relative reference with forward slashes, or a file:
// URI for an absolute path. Every byte outside RFC 3986's unreserved
// characters and the sub-delimiters safe in a path is percent-encoded,
// UTF-8 byte by byte, so spaces, '%', '#', '?' and non-ASCII names stay
// one valid reference. A relative name whose first segment holds a ':'
// gets "./" in front, so it is not read as a scheme.
func sarifURI(p string) string {
	p = filepath.ToSlash(p)
	abs := strings.HasPrefix(p, "/")
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || isPathChar(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	u := b.String()
	if abs {
		return "file://" + u
	}
	if first, _, _ := strings.Cut(u, "/"); strings.Contains(first, ":") {
		u = "./" + u
	}
	return u
}

// isPathChar reports whether c may stand unencoded in a URI path segment
// (RFC 3986 pchar, without '%'): unreserved, sub-delims, ':' and '@'.
func isPathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

func sarifLevel(s Severity) string {
	switch s {
	case SevError:
		return "error"
	case SevWarning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes the report as a SARIF 2.1.0 log: one rule per finding
// code, one result per finding, located at the evidence file and line (or
// the seal file for findings about the seal).
func (r *Report) WriteSARIF(w io.Writer) error {
	// rules, sorted by id
	ruleLevel := map[string]Severity{}
	ruleClass := map[string]Class{}
	for _, f := range r.Findings {
		if cur, ok := ruleLevel[f.Code]; !ok || sevRank(f.Severity) > sevRank(cur) {
			ruleLevel[f.Code] = f.Severity
			ruleClass[f.Code] = f.Class
		}
	}
	ids := make([]string, 0, len(ruleLevel))
	for id := range ruleLevel {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	index := map[string]int{}
	rules := make([]sarifRule, 0, len(ids))
	for i, id := range ids {
		index[id] = i
		info := codes[id]
		short, full := info.Short, info.Help
		if short == "" {
			short, full = id, id
		}
		rules = append(rules, sarifRule{
			ID: id, Name: ruleName(id),
			ShortDescription:     sarifMessage{Text: short},
			FullDescription:      sarifMessage{Text: full},
			DefaultConfiguration: sarifRuleConf{Level: sarifLevel(ruleLevel[id])},
			Properties:           map[string]any{"class": string(ruleClass[id])},
		})
	}
	// artifacts: the evidence file, then the seal file
	var artifacts []sarifArtifact
	artIndex := map[string]int{}
	addArt := func(p string) {
		if p == "" {
			return
		}
		u := sarifURI(p)
		if _, ok := artIndex[u]; ok {
			return
		}
		artIndex[u] = len(artifacts)
		artifacts = append(artifacts, sarifArtifact{Location: sarifArtifactLocation{URI: u}})
	}
	addArt(r.Evidence.File)
	addArt(r.Evidence.GraphFile)
	addArt(r.Seal.File)
	results := make([]sarifResult, 0, len(r.Findings))
	for _, f := range r.Findings {
		res := sarifResult{
			RuleID: f.Code, RuleIndex: index[f.Code], Level: sarifLevel(f.Severity),
			Message:             sarifMessage{Text: f.Message + refs(f)},
			PartialFingerprints: map[string]string{"witnessFinding/v1": fingerprint(f)},
			Properties:          map[string]any{"check": f.Check, "class": string(f.Class)},
		}
		if notApplicable(f.Code) {
			// a check that could not run is not a result about the
			// evidence: SARIF's kind notApplicable (level none), never
			// a pass or a fail
			res.Kind, res.Level = "notApplicable", "none"
		}
		if f.EventID != "" {
			res.Properties["event_id"] = f.EventID
		}
		if len(f.RPCID) > 0 {
			res.Properties["rpc_id"] = f.RPCID
		}
		if f.SealClause != "" {
			res.Properties["seal_clause"] = f.SealClause
		}
		if f.Tool != "" {
			res.Properties["tool"] = f.Tool
		}
		file := f.File
		if file == "" {
			if f.Line > 0 || f.EventID != "" {
				file = r.Evidence.File
			} else {
				file = r.Seal.File
			}
		}
		var loc sarifLocation
		if file != "" {
			u := sarifURI(file)
			ph := &sarifPhysical{ArtifactLocation: sarifArtifactLocation{URI: u}}
			if i, ok := artIndex[u]; ok {
				i := i
				ph.ArtifactLocation.Index = &i
			}
			if f.Line > 0 {
				ph.Region = &sarifRegion{StartLine: f.Line}
			}
			loc.PhysicalLocation = ph
		}
		if f.EventID != "" {
			fq := f.EventID
			if r.Evidence.Session != "" {
				fq = r.Evidence.Session + "/" + f.EventID
			}
			loc.LogicalLocations = []sarifLogical{{Name: f.EventID, FullyQualifiedName: fq, Kind: "object"}}
		} else if f.SealClause != "" {
			loc.LogicalLocations = []sarifLogical{{Name: f.SealClause, FullyQualifiedName: "seal." + f.SealClause, Kind: "member"}}
		}
		if loc.PhysicalLocation != nil || loc.LogicalLocations != nil {
			res.Locations = []sarifLocation{loc}
		}
		results = append(results, res)
	}
	props := map[string]any{"verdict": string(r.Verdict), "checks": r.Checks}
	if r.Seal.Digest != "" {
		props["seal_digest"] = r.Seal.Digest
	}
	if r.Evidence.GraphDigest != "" {
		props["graph_digest"] = r.Evidence.GraphDigest
	}
	if r.Evidence.Provenance != "" {
		props["provenance"] = r.Evidence.Provenance
	}
	if r.Evidence.imported() {
		props["imported"] = true
	}
	if len(r.Evidence.Failures) > 0 {
		props["failures"] = r.Evidence.Failures
	}
	if len(r.Qualifiers) > 0 {
		props["qualifiers"] = r.Qualifiers
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool: sarifTool{Driver: sarifDriver{
				Name: "witness", Version: version.Version,
				InformationURI: "https://github.com/agent-trace-witness/witness",
				Rules:          rules,
			}},
			Invocations: []sarifInvocation{{ExecutionSuccessful: true, ExitCode: r.ExitCode}},
			Artifacts:   artifacts,
			Results:     results,
			Properties:  props,
		}},
	}
	b, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sarif: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// notApplicable reports whether a finding code says a check (or part of
// one) could not run.
func notApplicable(code string) bool {
	return code == "not-checkable" || code == "scope-not-checkable"
}

func sevRank(s Severity) int {
	switch s {
	case SevError:
		return 2
	case SevWarning:
		return 1
	}
	return 0
}

// ruleName turns "unsealed-tool" into "UnsealedTool" (SARIF rule names are
// identifiers).
func ruleName(id string) string {
	var b strings.Builder
	for _, p := range strings.Split(id, "-") {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// fingerprint identifies a finding across runs independently of line moves.
func fingerprint(f Finding) string {
	s := sha256.Sum256([]byte(strings.Join([]string{f.Check, f.Code, f.EventID, string(f.RPCID), f.SealClause, f.Tool, f.Message}, "\x00")))
	return hex.EncodeToString(s[:16])
}

// WriteJUnit writes the report as JUnit XML: one test case per check; a check
// with violation, tampered or incomplete findings fails, listing them; a
// check that could not run is skipped; notices go to the case's system-out.
func (r *Report) WriteJUnit(w io.Writer) error {
	byCheck := map[string][]Finding{}
	for _, f := range r.Findings {
		byCheck[f.Check] = append(byCheck[f.Check], f)
	}
	suite := junit.Suite{
		Name: "witness verify",
		Properties: []junit.Property{
			{Name: "verdict", Value: string(r.Verdict)},
			{Name: "exit_code", Value: fmt.Sprint(r.ExitCode)},
			{Name: "seal", Value: r.Seal.File},
			{Name: "seal_digest", Value: r.Seal.Digest},
		},
	}
	if r.Evidence.File != "" {
		suite.Properties = append(suite.Properties, junit.Property{Name: "evidence", Value: r.Evidence.File})
	}
	if r.Evidence.GraphDigest != "" {
		suite.Properties = append(suite.Properties, junit.Property{Name: "graph_digest", Value: r.Evidence.GraphDigest})
	}
	if r.Evidence.GraphFile != "" {
		suite.Properties = append(suite.Properties, junit.Property{Name: "graph", Value: r.Evidence.GraphFile})
	}
	if r.Evidence.Provenance != "" {
		suite.Properties = append(suite.Properties, junit.Property{Name: "provenance", Value: r.Evidence.Provenance})
	}
	for _, f := range r.Evidence.Failures {
		suite.Properties = append(suite.Properties, junit.Property{Name: "failure", Value: f.EventID + ": " + f.Failure})
	}
	for _, q := range r.Qualifiers {
		suite.Properties = append(suite.Properties, junit.Property{Name: "qualifier", Value: q})
	}
	for _, c := range r.Checks {
		tc := junit.Case{Name: c.ID + ": " + c.Title, Classname: "witness.verify"}
		var fail, notes []string
		worst := verified
		for _, f := range byCheck[c.ID] {
			line := fmt.Sprintf("%s: %s: %s: %s%s", r.location(f), f.Severity, f.Code, f.Message, refs(f))
			if f.Class == ClassNotice {
				notes = append(notes, line)
				continue
			}
			fail = append(fail, line)
			if v := verdictOf(f.Class); v.rank() > worst.rank() {
				worst = v
			}
		}
		switch {
		case len(fail) > 0:
			tc.Failure = &junit.Message{
				Message:        fmt.Sprintf("%s (%s)", plural(len(fail), "finding"), worst),
				Type:           string(worst),
				Text:           strings.Join(fail, "\n") + "\n",
				EscapeNewlines: true,
			}
			suite.Failures++
		case c.Status == StatusNotCheckable:
			tc.Skipped = &junit.Message{Message: c.Reason, NoType: true}
			suite.Skipped++
		}
		if len(notes) > 0 {
			tc.SystemOut = strings.Join(notes, "\n") + "\n"
		}
		suite.Cases = append(suite.Cases, tc)
		suite.Tests++
	}
	// junit-10.xsd allows skipped on a testsuite, not on testsuites
	doc := junit.Suites{Name: "witness verify", Tests: suite.Tests, Failures: suite.Failures, Suites: []junit.Suite{suite}}
	return junit.Write(w, doc)
}
