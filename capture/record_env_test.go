package capture

import (
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordingEnv(t *testing.T) {
	now := time.Date(2026, 8, 30, 14, 33, 0, 0, time.UTC)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, on := recording(env(nil), now); on {
		t.Fatal("recording without ATW_RECORD")
	}
	if d, on := recording(env(map[string]string{"ATW_RECORD": "1", "ATW_RECORD_OUT": "x/y"}), now); !on || d != "x/y" {
		t.Fatal(d)
	}
	if d, _ := recording(env(map[string]string{"ATW_RECORD": "1"}), now); d != "witness-cassette-20260830T143300Z" {
		t.Fatal(d)
	}
}

// TestDialRecordsWithATWRecord: the library path writes a real cassette and
// event log when ATW_RECORD=1, to the default folder when ATW_RECORD_OUT is
// unset (0.1.0 wrote nothing there).
func TestDialRecordsWithATWRecord(t *testing.T) {
	bin := lvBuildTestServer(t, "testdata/servers/gosdk")
	wd, _ := os.Getwd()
	tmp := t.TempDir()
	if err := os.Chdir(tmp); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	getenv := func(k string) string {
		switch k {
		case "ATW_RECORD":
			return "1"
		case eventlog.EnvTS:
			return lvFrozenTS
		}
		return ""
	}
	s, err := Dial(DialOptions{LiveOptions: LiveOptions{Command: bin, Env: lvServerEnv(), Getenv: getenv}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool("greet", []byte(`{"name":"lib"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Dir, "witness-cassette-") {
		t.Fatalf("default dir %q", s.Dir)
	}
	ev, err := os.ReadFile(filepath.Join(tmp, s.Dir, derive.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ev), `"Hi lib"`) || !strings.Contains(string(ev), `"kind":"session_end"`) {
		t.Fatalf("events:\n%s", ev)
	}
	lvCheckChain(t, ev)
	cas, err := os.ReadFile(filepath.Join(tmp, s.Dir, derive.CassetteFile))
	if err != nil || !strings.Contains(string(cas), `"name\":\"lib\"`) {
		t.Fatalf("cassette: %v\n%s", err, cas)
	}
	// without ATW_RECORD nothing is written
	s2, err := Dial(DialOptions{LiveOptions: LiveOptions{Command: bin, Env: lvServerEnv(), Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil || s2.Dir != "" {
		t.Fatalf("%v %q", err, s2.Dir)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 {
		t.Fatalf("unexpected files: %v", entries)
	}
}
