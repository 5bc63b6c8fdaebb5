// Package secretservicetest holds the test of the keyring's OS backend
// against the real OS keyring (on Linux a Secret Service such as
// gnome-keyring). It is a package of its own because the other keyring tests
// replace go-keyring's provider with its in-memory mock for the whole
// process, and v0.2.8 cannot restore it.
package secretservicetest
