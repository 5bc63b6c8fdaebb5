// Package bundle holds the formats of anchoring a witness session in a
// transparency log, and their verification: the log entry (one per session
// end or checkpoint, canonical JSON), the tlog-checkpoint signed note and its
// cosignatures (C2SP tlog-cosignature v1), and the bundle written beside the
// events (entry, index, inclusion proof, checkpoint) so that a session can be
// verified offline. It also checks a session against a log at hand
// (LookupSession): the latest entry of the session, with every scanned entry
// authenticated against a signed checkpoint.
//
// It is in the formats layer: verify imports it; it starts no processes and
// knows nothing of how a log is appended to (package tlog does that).
// docs/formats/tlog-entry.md and docs/formats/tlog-bundle.md describe the
// files; docs/design/transparency.md says why they are so.
package bundle
