// Package firewall owns the forensics of a personal message firewall as the
// Social Harness message-policy specification describes it: decoding
// org.social-harness/message-policy/v1 files and their installation digest,
// the built-in code middleware and their rules, the English-rule decision
// providers that work without a model (unavailable, recorded), decision
// composition, org.social-harness/firewall-audit/v4 snapshots (writing and
// verifying), and deriving message events from MCP tool calls through a
// mapping file; collective operations through the specification's tables
// (Runner: the daemon's history windows, timing rules, result projection)
// and verification across the audits and logs of a group's members
// (VerifyGroup). It makes no network call. docs/formats/firewall.md documents
// the formats and every reading we made where the specification is silent.
package firewall
