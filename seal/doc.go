// Package seal owns the readiness seal: the agent spec it is made from, the
// signed body (byte-compatible with agent-trace-witness 0.1.0), HMAC-SHA256
// and Ed25519 signatures, cosignatures, the in-toto/DSSE form, seal_ref, and
// verification of signatures and k-of-n quorums.
//
// See docs/formats/seal.md.
package seal
