// Package core is the implementation of package firewall: message-policy
// files, the code middleware and decision providers, audit snapshots,
// derivation, collective operations and group verification. Package
// firewall is its public facade and documents the whole; this package is
// internal so that its many helpers are not part of the module's public
// surface (docs/design/public-surface.md).
package core
