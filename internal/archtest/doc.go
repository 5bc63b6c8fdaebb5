// Package archtest holds the test that keeps the package layers of
// docs/design/architecture.md true: it lists every package of the module
// with `go list -deps -json` and fails when one imports across the rule.
// It has no code of its own.
package archtest
