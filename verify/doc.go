// Package verify owns the judgement of evidence against a seal: the checks
// (seal signature and quorum, the event log's hash chain and signed end,
// unsealed and unused tools, argument scopes, system-prompt and tool-definition
// drift, the binding of the events to the seal), the findings they produce,
// the single verdict those findings add up to, and the report formats (text,
// JSON, SARIF 2.1.0, JUnit XML).
//
// The package reads evidence as a stream (an event log line by line, or a
// graph through package graph) and never makes a network call. Its output is
// deterministic: the same seal and evidence give the same bytes.
//
// docs/design/verdicts.md explains which check yields which verdict class and
// the precedence of verdicts; docs/design/scopes.md the scope globs;
// docs/formats/verdict.md the JSON report.
package verify
