// Package report builds the incident report of `witness report`: one
// self-contained HTML file (inline CSS, JS and SVG, a strict
// Content-Security-Policy, no network) that shows the verdict and the
// integrity of the evidence, a timeline with one lane per actor, each
// finding with its causal chain, the causal graph in time order, the
// counterfactuals (replay's blast-radius ranking, and what removing each
// finding's cause changes) and, when an audit is given, the firewall's
// checks.
//
// Build reads the inputs into a Data value (the JSON embedded in the page,
// docs/formats/report.md); WriteHTML renders it. Same inputs, same bytes:
// nothing depends on map order or the clock (the generation time is the
// caller's, ATW_WITNESS_TS in the command).
//
// report is in the analysis layer: it reads event logs, cassettes and
// audits, and uses verify, graph, replay and firewall; it records nothing.
package report
