package capture

import (
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
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
