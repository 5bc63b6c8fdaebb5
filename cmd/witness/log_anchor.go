package main

import (
	"context"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/tlog"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

func bundlePathOf(events string, b *bundle.Bundle) string { return bundle.Path(events, b.Entry.Count) }

// anchorFile anchors the last end of events in the log at target (a folder
// or a URL) and writes the bundle (never over an existing one).
func anchorFile(a *app, target, events string) (*bundle.Bundle, []string, error) {
	e, err := bundle.EntryOfFile(events)
	if err != nil {
		return nil, nil, err
	}
	out := bundle.Path(events, e.Count)
	if err := atomicfile.Check(out, atomicfile.Options{Flag: "bundle"}); err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	var b *bundle.Bundle
	var warnings []string
	if tlog.IsURL(target) {
		b, err = tlog.AnchorRemote(ctx, target, e, "")
	} else {
		var l *tlog.Log
		if l, _, err = openLogDir(a, target); err != nil {
			return nil, nil, err
		}
		b, warnings, err = l.Anchor(ctx, e)
		if cerr := l.Close(ctx); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, warnings, err
	}
	data, err := b.Marshal()
	if err != nil {
		return nil, warnings, err
	}
	return b, warnings, atomicfile.Write(out, append(data, '\n'), atomicfile.Options{Flag: "bundle"})
}
