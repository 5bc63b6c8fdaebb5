// Package tlog is the recording side of anchoring witness sessions in a
// transparency log: creating a log (Tessera's POSIX driver by default, its
// MySQL driver for several machines), appending a session's entry and
// returning its bundle (Log.Anchor), the HTTP personality that serves the
// log to witnesses on other machines (Handler: an append endpoint and the
// tlog-tiles read API), the client of that endpoint (AnchorRemote), and a
// C2SP tlog-witness that cosigns checkpoints (Witness).
//
// It is in the recording layer: it writes logs and talks to the network.
// The formats it writes, and their verification, are in tlog/bundle, which
// verify imports. docs/design/transparency.md says what anchoring proves.
package tlog
