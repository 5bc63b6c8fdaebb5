// Package eventlog owns the witness-events format (docs/formats/events.md),
// the pivot every later stage reads: the Event envelope and its kinds, the
// canonical encoding (EncodeEvent, with a fast path that must give the
// general path's bytes), the decoders (DecodeEvent and DecodeEventFast,
// which must agree), Reader, FastReader and Writer with the hash chain, the
// session header (StartLog, SessionID) and the signed end (Finish, EndMessage,
// EndFailure), the signature interfaces the keyring implements (Signer,
// SignatureVerifier), and VerifyLog, which checks a log rule by rule.
//
// It imports only internal plumbing: no process, network or recording code,
// so that graph, verify, replay and firewall can read evidence without it.
package eventlog
