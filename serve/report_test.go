package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// reportCassette records initialize, tools/list and two echo calls.
const reportCassette = `{"format":"witness-cassette","v":1,"command":"echo","args":[],"env":[],"started":"2026-08-30T14:33:00+00:00","frozen":true,"mode":"proxy"}
{"seq":0,"dir":"c2s","off":0,"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"h\",\"version\":\"1\"}}}"}
{"seq":1,"dir":"s2c","off":0,"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"e\",\"version\":\"1\"}}}"}
{"seq":2,"dir":"c2s","off":147,"text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}"}
{"seq":3,"dir":"s2c","off":135,"text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}"}
{"seq":4,"dir":"c2s","off":245,"text":"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///notes/a\"}}"}
{"seq":5,"dir":"s2c","off":211,"text":"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"contents\":[]}}"}
`

// TestServeReportOnSignal: a session stopped by a signal while the host
// still holds stdin open finishes its report (the request never asked for
// included) and returns its verdict.
func TestServeReportOnSignal(t *testing.T) {
	s, err := Load(strings.NewReader(reportCassette), "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SHA256) != 64 {
		t.Fatalf("digest %q", s.SHA256)
	}
	var rep bytes.Buffer
	w, err := drift.NewWriter(&rep, s.Header(Options{}, false))
	if err != nil {
		t.Fatal(err)
	}
	hostW, srvIn := io.Pipe()
	srvOut, hostR := io.Pipe()
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		_, err := s.Serve(Options{Stdin: hostW, Stdout: hostR, Report: w, Signals: sigs})
		hostR.Close()
		done <- err
	}()
	br := bufio.NewReader(srvOut)
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"9"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"bye"}}}`,
	} {
		io.WriteString(srvIn, l+"\n")
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	sigs <- syscall.SIGTERM
	err = <-done
	if exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("err %v", err)
	}
	r, rerr := drift.Read(bytes.NewReader(rep.Bytes()), "r")
	if rerr != nil {
		t.Fatalf("%v\n%s", rerr, rep.Bytes())
	}
	if r.End == nil || r.End.Stop != drift.StopSignal || r.End.Signal != "SIGTERM" {
		t.Fatalf("end %+v\n%s", r.End, rep.Bytes())
	}
	want := []string{"matched initialize", "missed tools/call", "never_asked tools/call", "never_asked resources/read"}
	var got []string
	for _, e := range r.Entries {
		m := e.Recorded
		if m == nil {
			m = e.Incoming
		}
		got = append(got, string(e.Status)+" "+m.Method)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("entries %v, want %v", got, want)
	}
	miss := r.Entries[1]
	if miss.Nearest == nil || miss.Nearest.Line != 4 || !strings.Contains(miss.Diff, `+       "text": "bye"`) || miss.Incoming.Tool != "echo" {
		t.Errorf("miss entry %+v", miss)
	}
	if r.Entries[3].Recorded.URI != "file:///notes/a" || r.Header.Requests != 3 || r.Header.Cassette.SHA256 != s.SHA256 {
		t.Errorf("header %+v, last entry %+v", r.Header, r.Entries[3].Recorded)
	}
}

// TestServeReportStdoutBroken: a host that stops reading ends the session
// (exit 5) and the report says why.
func TestServeReportStdoutBroken(t *testing.T) {
	s, err := Load(strings.NewReader(reportCassette), "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	w, _ := drift.NewWriter(&rep, s.Header(Options{}, false))
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}` + "\n")
	_, err = s.Serve(Options{Stdin: in, Stdout: brokenWriter{}, Report: w})
	if exitcode.Of(err) != exitcode.Failure {
		t.Fatalf("err %v", err)
	}
	r, rerr := drift.Read(bytes.NewReader(rep.Bytes()), "r")
	if rerr != nil || r.End == nil || r.End.Stop != drift.StopStdout || !strings.Contains(r.End.Error, "broken pipe") {
		t.Fatalf("%v %+v\n%s", rerr, r, rep.Bytes())
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestServeReportWriteFails: a report that cannot be written is exit 5 on
// an otherwise clean run, never a silent success.
func TestServeReportWriteFails(t *testing.T) {
	s, err := Load(strings.NewReader(reportCassette), "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fw := &failing{}
	w, err := drift.NewWriter(fw, s.Header(Options{}, false))
	if err != nil {
		t.Fatal(err)
	}
	fw.fail = true
	var stderr strings.Builder
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}` + "\n")
	_, err = s.Serve(Options{Stdin: in, Stdout: io.Discard, Stderr: &stderr, Report: w})
	if exitcode.Of(err) != exitcode.Failure || !strings.Contains(stderr.String(), "the drift report can no longer be written") {
		t.Fatalf("err %v\n%s", err, stderr.String())
	}
}

type failing struct{ fail bool }

func (f *failing) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}
