package version

import (
	"runtime/debug"
	"testing"
)

// A build without -X values takes its commit and date from the Go build's
// VCS stamp; -X values win over the stamp, and then "modified" is not
// claimed (the stamp's tree is not the one named).
func TestFromSettings(t *testing.T) {
	stamp := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "c0c5c14dc3516eb714258ba0a97ba31759a1b7e9"},
		{Key: "vcs.time", Value: "2026-12-07T23:15:36Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	got := fromSettings(Info{Version: "v1"}, stamp, false)
	if got.Commit != "c0c5c14dc3516eb714258ba0a97ba31759a1b7e9" || got.Date != "2026-12-07T23:15:36Z" || !got.Modified {
		t.Errorf("from the stamp: %+v", got)
	}
	if s := got.String(); s != "witness v1 (, , commit c0c5c14dc351+modified, built 2026-12-07T23:15:36Z)" {
		t.Errorf("String: %q", s)
	}
	got = fromSettings(Info{Version: "v1", Commit: "0123", Date: "2026-01-01T00:00:00Z"}, stamp, true)
	if got.Commit != "0123" || got.Date != "2026-01-01T00:00:00Z" || got.Modified {
		t.Errorf("-X over the stamp: %+v", got)
	}
	if got := fromSettings(Info{Version: "v1"}, nil, false); got.Commit != "" || got.Date != "" {
		t.Errorf("no stamp: %+v", got)
	}
}
