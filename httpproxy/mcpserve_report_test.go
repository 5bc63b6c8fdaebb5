package httpproxy

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/serve/httpserve"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// serveMCPReport serves cassette with a drift report, runs client against
// its URL, stops serve (after one session, or by sending SIGTERM when
// sigterm is set) and returns the report read back and its verdict.
func serveMCPReport(t *testing.T, cassette string, sigterm bool, client func(url string)) (*drift.Report, *drift.Verdict, error) {
	t.Helper()
	var rep syncBuffer
	var stderr syncBuffer
	ready := make(chan string, 1)
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	o := httpserve.MCPServeOptions{Listen: httplocal.DefaultListen, Stderr: &stderr, Signals: sigs, Report: &rep, Ready: func(u string) { ready <- u }}
	if !sigterm {
		o.ExitAfter = 1
	}
	go func() {
		_, err := httpserve.ServeMCP(cassette, o)
		done <- err
	}()
	client(<-ready + "/mcp")
	if sigterm {
		sigs <- syscall.SIGTERM
	}
	err := <-done
	r, rerr := drift.Read(strings.NewReader(rep.String()), "report.jsonl")
	if rerr != nil {
		t.Fatalf("read the report: %v\n%s", rerr, rep.String())
	}
	return r, drift.Judge([]*drift.Report{r}, drift.Options{}), err
}

func TestServeMCPDriftReport(t *testing.T) {
	up := httptest.NewServer(&fakeMCP{})
	defer up.Close()
	s := startProxy(t, up.URL, Options{})
	runMCPSession(t, s.URL+"/mcp", "replay me")
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	cassette := filepath.Join(s.Dir, MCPDir, "1", derive.CassetteFile)

	// every recorded request asked: no drift, the report ends at --exit-after
	r, v, err := serveMCPReport(t, cassette, false, func(u string) { runMCPSession(t, u, "replay me") })
	if err != nil {
		t.Fatal(err)
	}
	if v.Drift || r.End == nil || r.End.Stop != drift.StopExitAfter || r.End.Counts.Matched != 3 || r.End.Entries != 3 {
		t.Errorf("all asked: drift %v, end %+v", v.Drift, r.End)
	}
	if r.Header.Serve.Transport != "http" || !strings.HasPrefix(r.Header.Serve.Address, "127.0.0.1:") || r.Header.Cassette.SHA256 == "" {
		t.Errorf("header %+v", r.Header)
	}

	// a miss: drift, with the nearest recording and the diff; the recorded
	// call is then never asked
	r, v, err = serveMCPReport(t, cassette, false, func(u string) { runMCPSession(t, u, "something else") })
	if err == nil || !v.Drift || r.End == nil || r.End.Counts.Missed != 1 || r.End.Counts.NeverAsked != 1 {
		t.Fatalf("a miss: err %v, drift %v, end %+v", err, v.Drift, r.End)
	}
	var junit bytes.Buffer
	if err := v.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`type="missed"`, `type="never_asked"`, "diff (-recorded +incoming):", "something else", "replay me"} {
		if !strings.Contains(junit.String(), want) {
			t.Errorf("JUnit lacks %q:\n%s", want, junit.String())
		}
	}

	// SIGTERM with a session open: the session is ended, its requests
	// never asked are reported and the report is finished
	r, v, _ = serveMCPReport(t, cassette, true, func(u string) {
		resp, _ := mcpCall(t, u, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if resp.Header.Get("Mcp-Session-Id") == "" {
			t.Error("no session id")
		}
	})
	if !v.Drift || r.End == nil || r.End.Stop != drift.StopSignal || r.End.Signal != "SIGTERM" || r.End.Counts.Matched != 1 || r.End.Counts.NeverAsked != 2 {
		t.Errorf("SIGTERM: drift %v, end %+v", v.Drift, r.End)
	}
}
