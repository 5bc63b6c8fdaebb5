package derive

import (
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"os"
	"path/filepath"
)

// The file names of a recording folder (capture, proxy, Dial, proxy
// --listen): the one definition every writer and reader uses.
const (
	// CassetteFile holds the wire: the message cassette of a stdio or MCP
	// session (cassette.Format), or the HTTP cassette of proxy --listen
	// (cassette.HTTPFormat).
	CassetteFile = "cassette.jsonl"
	// EventsFile holds the event log (eventlog).
	EventsFile = "events.jsonl"
	// HTTPCassetteFile holds the HTTP exchanges of a session over
	// Streamable HTTP (capture --url), beside the message cassette and the
	// event log.
	HTTPCassetteFile = "http.jsonl"
)

// CreateRecordingFiles creates DIR/cassette.jsonl and DIR/events.jsonl for
// a recording written as it happens (capture, proxy, Dial), under the
// evidence rules of o (internal/atomicfile): neither may be an input,
// neither is created through a symlink, and an existing recording is
// refused unless o.Force. Both files are checked before either is created,
// so a refusal leaves DIR as it was. o.Flag names the folder flag.
func CreateRecordingFiles(dir string, o atomicfile.Options) (cassette, events *os.File, err error) {
	cp, ep := filepath.Join(dir, CassetteFile), filepath.Join(dir, EventsFile)
	for _, p := range []string{cp, ep} {
		if err := atomicfile.Check(p, o); err != nil {
			return nil, nil, err
		}
	}
	if cassette, err = atomicfile.CreateLive(cp, o); err != nil {
		return nil, nil, err
	}
	if events, err = atomicfile.CreateLive(ep, o); err != nil {
		cassette.Close()
		return nil, nil, err
	}
	return cassette, events, nil
}

// CreateHTTPCassetteFile creates DIR/http.jsonl for a capture over HTTP
// under the evidence rules of o, after checking it and the two files
// CreateRecordingFiles creates next, so that a refusal leaves DIR as it was.
func CreateHTTPCassetteFile(dir string, o atomicfile.Options) (*os.File, error) {
	hp := filepath.Join(dir, HTTPCassetteFile)
	for _, p := range []string{filepath.Join(dir, CassetteFile), filepath.Join(dir, EventsFile), hp} {
		if err := atomicfile.Check(p, o); err != nil {
			return nil, err
		}
	}
	return atomicfile.CreateLive(hp, o)
}
