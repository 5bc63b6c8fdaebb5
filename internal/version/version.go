// Package version holds the witness version, recorded in session headers and
// printed by `witness version`.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the witness release version. A release build sets it, and
// Commit and Date, with -ldflags "-X
// github.com/agent-trace-witness/witness/internal/version.Version=v0.3.0".
var Version = "0.2.0-dev"

// Commit and Date name the source and the time of a release build; empty,
// Info takes them from the build's VCS stamp (go build in a checkout).
var (
	Commit = ""
	Date   = ""
)

// Info describes the running binary.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Date    string `json:"build_date,omitempty"`
	// Modified: the checkout had uncommitted changes when it was built.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// Get returns the binary's Info: the -X values where set, the VCS stamp of
// debug.ReadBuildInfo otherwise.
func Get() Info {
	in := Info{Version: Version, Commit: Commit, Date: Date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = fromSettings(in, bi.Settings, Commit != "")
	}
	return in
}

// fromSettings fills in's empty Commit and Date from the build's VCS stamp
// (vcs.revision, vcs.time); Modified only when the commit is the stamp's
// (pinned: a -X Commit names it).
func fromSettings(in Info, settings []debug.BuildSetting, pinned bool) Info {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if in.Commit == "" {
				in.Commit = s.Value
			}
		case "vcs.time":
			if in.Date == "" {
				in.Date = s.Value
			}
		case "vcs.modified":
			in.Modified = s.Value == "true" && !pinned
		}
	}
	return in
}

// String is the one-line form `witness version` and `witness --version`
// print.
func (i Info) String() string {
	s := "witness " + i.Version + " (" + i.Go + ", " + i.Platform
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += ", commit " + c
		if i.Modified {
			s += "+modified"
		}
	}
	if i.Date != "" {
		s += ", built " + i.Date
	}
	return s + ")"
}
