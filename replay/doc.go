// Package replay owns counterfactuals over a witness PROV graph: "what if
// these actions had not happened". It computes the compensation set (every
// node that depends, transitively, on a removed node through PROV dependency
// edges), the actions whose effects cannot be undone, the share of the run's
// actions that would disappear, a blast-radius ranking of every activity, and
// overlays of verify findings and verdicts on the observed and the
// counterfactual run. It reads a graph only; it never touches the agent, a
// server or the event log, and it never claims to re-create what an action
// destroyed. docs/replay.md documents the algorithm and the output format.
package replay
