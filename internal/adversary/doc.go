// Package adversary holds the hostile-host suite: end-to-end tests in which
// a lying MCP host (testdata/hostilehost) drives the real `witness proxy`
// binary against real servers (the Go SDK fixture in testdata/servers/gosdk
// and the pinned server-everything), and the evidence is judged against
// the ground truth of what the server actually did.
//
// The rule under test is the product's promise: whatever the host sends,
// the cassette holds the exact bytes the server received, and `witness
// verify` never says verified when a forbidden call ran or when the host
// sent a line the witness cannot read in exactly one way.
//
// The package has no non-test code beyond this comment.
package adversary
