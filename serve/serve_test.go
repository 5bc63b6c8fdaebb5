package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/proxy"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var echoServer string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// echo returns the path of testdata/servers/echo, built on first use (not
// in TestMain, so that fuzz workers start fast).
func echo(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "witness-serve-test")
		if buildErr != nil {
			return
		}
		echoServer = filepath.Join(buildDir, "echo")
		out, err := exec.Command("go", "build", "-o", echoServer, "../testdata/servers/echo").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build echo server: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return echoServer
}

// step is one host line; replies is how many lines the host then reads.
type step struct {
	line    string
	replies int
}

// play drives a host session against stdin/stdout pipes and returns what
// the host read.
func play(t *testing.T, w io.WriteCloser, r io.Reader, steps []step) string {
	t.Helper()
	br := bufio.NewReader(r)
	var got bytes.Buffer
	for _, s := range steps {
		if _, err := io.WriteString(w, s.line+"\n"); err != nil {
			t.Fatalf("write %s: %v", s.line, err)
		}
		for i := 0; i < s.replies; i++ {
			l, err := br.ReadString('\n')
			got.WriteString(l)
			if err != nil {
				t.Fatalf("read reply to %s: %v (so far %q)", s.line, err, got.String())
			}
		}
	}
	w.Close()
	rest, _ := io.ReadAll(br)
	got.Write(rest)
	return got.String()
}

func session(ids []string) []step {
	return []step{
		{`{"jsonrpc":"2.0","id":` + ids[0] + `,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1.0"}}}`, 1},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 2}, // list_changed, roots/list
		{`{"jsonrpc":"2.0","id":` + ids[1] + `,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`, 1},
		{`{"jsonrpc":"2.0","id":` + ids[2] + `,"method":"tools/list","params":{"cursor":"page-2"}}`, 1},
		{`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`, 0},
		{`{"jsonrpc":"2.0","id":` + ids[3] + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`, 1},
		{`{"jsonrpc":"2.0","id":` + ids[4] + `,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`, 1},
		{`{"jsonrpc":"2.0","id":` + ids[5] + `,"method":"tools/call","params":{"name":"fail","arguments":{}}}`, 1},
		{`{"jsonrpc":"2.0","id":` + ids[6] + `,"method":"ping"}`, 1},
	}
}

var recordedIDs = []string{"1", "2", "3", "4", "5", "6", "7"}

// record runs session through `witness proxy` (the library) against the
// echo server and returns the cassette path and the host transcript.
func record(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rec")
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := proxy.Run(context.Background(), proxy.Options{OutDir: dir, Command: []string{echo(t), "-notify", "-ask"},
			Env: []string{"PATH=/usr/bin"}, Stdin: hostW, Stdout: hostR, Getenv: func(k string) string {
				if k == eventlog.EnvTS {
					return "2026-08-30T14:33:00+00:00"
				}
				return ""
			}})
		hostR.Close()
		done <- err
	}()
	got := play(t, proxyIn, proxyOut, session(recordedIDs))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hostW.Close()
	return filepath.Join(dir, derive.CassetteFile), got
}

func serveSession(t *testing.T, cas string, steps []step) (string, string, *Result, error) {
	t.Helper()
	return serveSessionOpts(t, cas, Options{}, steps)
}

// serveSessionOpts is serveSession with options (Stdin, Stdout and Stderr
// are set here).
func serveSessionOpts(t *testing.T, cas string, o Options, steps []step) (string, string, *Result, error) {
	t.Helper()
	s, err := LoadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	hostW, srvIn := io.Pipe()
	srvOut, hostR := io.Pipe()
	var stderr bytes.Buffer
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		o.Stdin, o.Stdout, o.Stderr = hostW, hostR, &stderr
		res, err := s.Serve(o)
		hostR.Close()
		done <- ret{res, err}
	}()
	got := play(t, srvIn, srvOut, steps)
	r := <-done
	return got, stderr.String(), r.res, r.err
}

func TestServeReplaysRecordedSession(t *testing.T) {
	cas, live := record(t)
	got, stderr, res, err := serveSession(t, cas, session(recordedIDs))
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	if got != live {
		t.Errorf("served transcript differs from the live one:\nlive  %q\nserve %q", live, got)
	}
	if res.Served != 7 || res.Misses != 0 || res.Unused != 0 {
		t.Errorf("result %+v\n%s", res, stderr)
	}
}

// TestServeEchoesIncomingIDs drives the same session with other ids, of
// another type: every answer carries the incoming id, every other byte as
// recorded.
func TestServeEchoesIncomingIDs(t *testing.T) {
	cas, live := record(t)
	ids := []string{`"a"`, `"b"`, `"c"`, `0`, `"e"`, `-7`, `"g"`}
	got, stderr, _, err := serveSession(t, cas, session(ids))
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	want := live
	for i, id := range recordedIDs {
		want = strings.Replace(want, `"id":`+id+`,"result"`, `"id":`+ids[i]+`,"result"`, 1)
	}
	if got != want {
		t.Errorf("ids not echoed:\nwant %q\n got %q", want, got)
	}
}

func TestServeMiss(t *testing.T) {
	cas, _ := record(t)
	steps := session(recordedIDs)[:3]
	steps = append(steps, step{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"two"}}}`, 1})
	got, stderr, res, err := serveSession(t, cas, steps)
	if exitcode.Of(err) != exitcode.Incomplete || res.Misses != 1 {
		t.Fatalf("err %v (code %v), result %+v", err, exitcode.Of(err), res)
	}
	last := got[strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n")+1:]
	m, perr := mcp.Parse([]byte(strings.TrimSpace(last)))
	if perr != nil || string(m.ID) != "9" || !strings.Contains(string(m.Error), fmt.Sprint(codeMiss)) {
		t.Errorf("miss answer %q", last)
	}
	for _, want := range []string{
		`miss: no recorded answer for tools/call {"arguments":{"text":"two"},"name":"echo"} (id 9)`,
		`nearest recorded request (cassette line`,
		`tools/call {"arguments":{"text":"one"},"name":"echo"}`,
		`-recorded +incoming`, `"one"`, `"two"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// writeCassette writes a cassette of the given c2s/s2c lines.
func writeCassette(t *testing.T, lines ...string) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := cassette.NewWriter(&buf, cassette.Header{Command: "x", Started: "2026-08-30T14:33:00+00:00", Frozen: true, Mode: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		dir, data, _ := strings.Cut(l, " ")
		if _, err := w.Record(cassette.Dir(dir), []byte(data), false); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "c.jsonl")
	os.WriteFile(p, buf.Bytes(), 0o644)
	return p
}

func TestServeRepeatedCallsInOrder(t *testing.T) {
	cas := writeCassette(t,
		`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roll","arguments":{}}}`,
		`s2c {"result":{"content":[{"type":"text","text":"first"}]},"jsonrpc":"2.0","id":1}`,
		`c2s {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"roll","arguments":{},"_meta":{"progressToken":"p2"}}}`,
		`s2c {"method":"notifications/progress","params":{"progressToken":"p2","progress":1},"jsonrpc":"2.0"}`,
		`s2c {"result":{"content":[{"type":"text","text":"second"}]},"jsonrpc":"2.0","id":2}`,
	)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"roll","arguments":{}}}`
	withToken := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"roll","arguments":{},"_meta":{"progressToken":"host-11"}}}`
	got, stderr, res, err := serveSession(t, cas, []step{{fmt.Sprintf(call, 10), 1}, {fmt.Sprintf(withToken, 11), 2}, {fmt.Sprintf(call, 12), 1}})
	// the progress notification carries the host's token, every other byte as recorded
	want := `{"result":{"content":[{"type":"text","text":"first"}]},"jsonrpc":"2.0","id":10}` + "\n" +
		`{"method":"notifications/progress","params":{"progressToken":"host-11","progress":1},"jsonrpc":"2.0"}` + "\n" +
		`{"result":{"content":[{"type":"text","text":"second"}]},"jsonrpc":"2.0","id":11}` + "\n" +
		`{"jsonrpc":"2.0","id":12,"error":{"code":-32050,"message":"witness serve: the cassette ` + cas + ` has no recorded answer for this tools/call request"}}` + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if exitcode.Of(err) != exitcode.Incomplete || res.Served != 2 || !strings.Contains(stderr, "recorded 2 time(s) and asked once more") {
		t.Errorf("err %v res %+v stderr %s", err, res, stderr)
	}
}

func TestServeUnrecordedPingAndGarbage(t *testing.T) {
	cas := writeCassette(t,
		`c2s {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`,
		`s2c {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
	)
	got, stderr, res, err := serveSession(t, cas, []step{
		// another host name and version still matches
		{`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"2"}}}`, 1},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"}`, 1},
		{`not json`, 1},
	})
	want := `{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"
	if !strings.HasPrefix(got, want) || !strings.Contains(got, `"id":null,"error":{"code":-32700`) {
		t.Errorf("got %q", got)
	}
	if exitcode.Of(err) != exitcode.Incomplete || res.Pings != 1 || res.Misses != 1 || !strings.Contains(stderr, "not a JSON-RPC message") {
		t.Errorf("err %v res %+v stderr %s", err, res, stderr)
	}
}

func TestLoadRefusesInvalidCassette(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(p, []byte(`{"format":"nope"}`+"\n"), 0o644)
	_, err := LoadFile(p)
	if exitcode.Of(err) != exitcode.Tampered {
		t.Fatalf("err %v", err)
	}
}

func FuzzKeyOf(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"_meta":{}}]},"_meta":{"progressToken":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{},"protocolVersion":"2025-11-25"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n","params":[1.0,2e3]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := mcp.Parse(line)
		if err != nil || m.Kind == mcp.KindResponse {
			return
		}
		k1, err1 := keyOf(m)
		m2, _ := mcp.Parse(line)
		k2, err2 := keyOf(m2)
		if (err1 == nil) != (err2 == nil) || k1 != k2 {
			t.Fatalf("KeyOf not deterministic: %v %v / %v %v", k1, err1, k2, err2)
		}
		if err1 != nil || k1.Params == "" {
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(k1.Params), &top) == nil {
			if _, kept := top["_meta"]; kept {
				t.Fatalf("volatile params._meta kept: %s", k1.Params)
			}
		}
		// a _meta deeper down is data: the key keeps every one the params had below the top
		var in, out any
		if json.Unmarshal(m.Params, &in) != nil || json.Unmarshal([]byte(k1.Params), &out) != nil {
			return
		}
		if obj, ok := in.(map[string]any); ok {
			delete(obj, "_meta")
		}
		if a, b := countMeta(in), countMeta(out); a != b {
			t.Fatalf("nested _meta dropped or invented (%d in the params, %d in the key): params %s, key %s", a, b, m.Params, k1.Params)
		}
	})
}

// countMeta counts the members named "_meta" in a decoded JSON value.
func countMeta(v any) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == "_meta" {
				n++
			}
			n += countMeta(c)
		}
	case []any:
		for _, c := range t {
			n += countMeta(c)
		}
	}
	return n
}

// FuzzServeLine feeds arbitrary host input to a served cassette: serve never
// panics, and everything it writes is JSON-RPC lines from the cassette or
// its own answers.
func FuzzServeLine(f *testing.F) {
	var buf bytes.Buffer
	w, err := cassette.NewWriter(&buf, cassette.Header{Command: "x", Started: "2026-08-30T14:33:00+00:00", Frozen: true})
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range []string{
		`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roll","arguments":{"n":1}}}`,
		`s2c {"method":"notifications/progress","params":{"progress":1},"jsonrpc":"2.0"}`,
		`s2c {"result":{"content":[]},"jsonrpc":"2.0","id":1}`,
		`c2s {"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`s2c {"jsonrpc":"2.0","id":0,"method":"roots/list"}`,
		`c2s {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`,
		`s2c {"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"name?"}}`,
		`c2s {"jsonrpc":"2.0","id":5,"result":{"action":"accept","content":{"name":"Ada"}}}`,
		`s2c {"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
	} {
		dir, data, _ := strings.Cut(l, " ")
		w.Record(cassette.Dir(dir), []byte(data), false)
	}
	cas := buf.Bytes()
	f.Add([]byte(`{"jsonrpc":"2.0","id":"z","method":"tools/call","params":{"name":"roll","arguments":{"n":1},"_meta":{"progressToken":3}}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":0,"result":{}}`))
	f.Add([]byte("[1,2]\n{\"id\":1}\n\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}` + "\n" + `{"jsonrpc":"2.0","id":5,"result":{"action":"accept","content":{"name":"Mallory"}}}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Load(bytes.NewReader(cas), "fuzz.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		res, _ := s.Serve(Options{Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errOut, MaxLine: 1 << 10})
		if res == nil {
			t.Fatal("no result")
		}
		for _, l := range strings.SplitAfter(out.String(), "\n") {
			if l == "" {
				continue
			}
			if _, perr := mcp.Parse([]byte(strings.TrimSuffix(l, "\n"))); perr != nil {
				t.Fatalf("served a line that is not JSON-RPC: %q (%v)", l, perr)
			}
		}
	})
}

func TestServeOverlongLine(t *testing.T) {
	cas := writeCassette(t,
		`c2s {"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`s2c {"jsonrpc":"2.0","id":1,"result":{}}`,
	)
	s, err := LoadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	in := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 100) + `"}}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	res, err := s.Serve(Options{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &stderr, MaxLine: 64})
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"witness serve: a request line longer than 64 bytes"}}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	if out.String() != want || res.Misses != 1 || exitcode.Of(err) != exitcode.Incomplete {
		t.Errorf("out %q misses %d err %v\n%s", out.String(), res.Misses, err, stderr.String())
	}
}

// serve matches by exact tokens: a call with 9007199254740993 (or 1) is
// never answered with the recording of 9007199254740992 (or 1.0), which
// canonical JSON (doubles) would confuse.
func TestServeMatchesExactNumberTokens(t *testing.T) {
	cas := writeCassette(t,
		`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":{"n":9007199254740992}}}`,
		`s2c {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"even"}]}}`,
		`c2s {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get","arguments":{"n":1.0}}}`,
		`s2c {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"one point oh"}]}}`,
	)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get","arguments":{"n":%s}}}`
	got, _, res, _ := serveSession(t, cas, []step{
		{fmt.Sprintf(call, 10, "9007199254740993"), 1},
		{fmt.Sprintf(call, 11, "1"), 1},
		{fmt.Sprintf(call, 12, "9007199254740992"), 1},
		{fmt.Sprintf(call, 13, "1.0"), 1},
	})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 || strings.Contains(lines[0], "even") || strings.Contains(lines[1], "one point oh") ||
		!strings.Contains(lines[2], `"text":"even"}]},"id":12`) && !strings.Contains(lines[2], `"id":12,"result":{"content":[{"type":"text","text":"even"}]}`) ||
		!strings.Contains(lines[3], "one point oh") || res.Served != 2 || res.Misses != 2 {
		t.Fatalf("res %+v\n%s", res, got)
	}
	a, _ := mcp.Parse([]byte(fmt.Sprintf(call, 1, "9007199254740993")))
	b, _ := mcp.Parse([]byte(fmt.Sprintf(call, 1, "9007199254740992")))
	ka, _ := keyOf(a)
	kb, _ := keyOf(b)
	if ka == kb {
		t.Fatalf("keys equal: %s", ka)
	}
}
