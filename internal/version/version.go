// Package version holds the witness version, recorded in session headers and
// printed by `witness version`.
package version

// Version is the witness release version.
const Version = "0.2.0-dev"
