// Package keyring owns witness key material: the keys.json file (the
// agent-trace-witness 0.1.0 schema plus Ed25519 entries), the file and OS
// (Secret Service / Keychain / Credential Manager) secret backends,
// generation, rotation and revocation under a cross-process lock with atomic
// writes, signers for HMAC-SHA256 and Ed25519, verification of a signature
// against the keyring, and public trust files for verifiers without secrets.
//
// See docs/formats/keys.md for the file formats.
package keyring
