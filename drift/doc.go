// Package drift owns the drift report of `witness serve --report` and the
// one verdict `witness drift` gives over several of them
// (docs/formats/drift-report.md).
//
// A report is JSON lines, written as the run happens so that a serve
// killed by SIGKILL still leaves what it saw: a header naming the cassette
// (name, sha256) and the serve options, one entry per recorded request
// matched, per request missed (with the nearest recording and a diff), per
// host answer to a server request, then the recorded requests never asked
// for, then an end record with the counts. A report without its end record
// was cut short: serve did not stop cleanly, and Judge counts it as drift.
//
// The package is in the formats layer: the stdio serve (package serve) and
// the HTTP serve write reports with Writer; Read, Judge, WriteText and
// WriteJUnit are pure functions over the files, for `witness drift`.
package drift
