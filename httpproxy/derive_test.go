package httpproxy

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/modelapi"
)

// fixture is one line of modelapi/testdata/exchanges.jsonl: a real
// exchange between an official SDK and the scripted model server.
type fixture struct {
	Scenario     string `json:"scenario"`
	Method       string `json:"method"`
	Path         string `json:"path"`
	RequestBody  []byte `json:"request_body"`
	Status       int    `json:"status"`
	ContentType  string `json:"content_type"`
	ResponseBody []byte `json:"response_body"`
	Cut          bool   `json:"cut"`
}

func readFixtures(t testing.TB) []fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "modelapi", "testdata", "exchanges.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []fixture
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var f fixture
		if err := json.Unmarshal(line, &f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if len(out) < 15 {
		t.Fatalf("%d fixtures", len(out))
	}
	return out
}

// fixtureUpstream answers each fixture's request with its recorded answer,
// streams in chunks of 7 bytes, each flushed; a cut answer aborts the
// connection after its bytes. Other paths get a small JSON list.
func fixtureUpstream(t testing.TB, fs []fixture) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		body.ReadFrom(r.Body)
		for _, f := range fs {
			if f.Path != r.URL.Path || !bytes.Equal(f.RequestBody, body.Bytes()) {
				continue
			}
			w.Header().Set("Content-Type", f.ContentType)
			w.WriteHeader(f.Status)
			rc := http.NewResponseController(w)
			for b := f.ResponseBody; len(b) > 0; {
				n := min(7, len(b))
				w.Write(b[:n])
				rc.Flush()
				b = b[n:]
			}
			if f.Cut {
				panic(http.ErrAbortHandler)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(up.Close)
	return up
}

// logEvents decodes an event log.
func logEvents(t testing.TB, data []byte) []*eventlog.Event {
	t.Helper()
	var out []*eventlog.Event
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		e, perr := eventlog.DecodeEvent(line)
		if perr != nil {
			t.Fatalf("line %d: %v", i+1, perr)
		}
		out = append(out, e)
	}
	return out
}

// rederive derives the log from the session's cassette with the live
// log's end reason and the test signer.
func rederive(t testing.TB, s *session, live []*eventlog.Event) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(s.Dir, derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sg, err := keyring.LegacySigner(testKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	end := live[len(live)-1]
	var out bytes.Buffer
	if err := derive.EventsFromCassette(f, derive.CassetteFile, &out, derive.Options{End: eventlog.EndOptions{Signers: []eventlog.Signer{sg}, TS: end.TS, Reason: end.End.Reason}}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestModelEventsConcurrent sends every fixture exchange (OpenAI Chat,
// Responses, Anthropic; streamed, not streamed, errors, cut streams) and
// a non-model request through the proxy at once. Each model call gives a
// model_input and a model_output whose payloads are what modelapi reads
// from the same bytes, the output linked to its input, the input first;
// the non-model request a witness/http-exchange notification; the log
// verifies and re-derives byte for byte from the cassette alone, with
// frozen and with real time.
func TestModelEventsConcurrent(t *testing.T) {
	fs := readFixtures(t)
	up := fixtureUpstream(t, fs)
	for _, frozen := range []bool{true, false} {
		name := "frozen"
		o := Options{Deriver: derive.ModelDeriver{}}
		if !frozen {
			name = "real-time"
			o.Getenv = func(string) string { return "" }
		}
		t.Run(name, func(t *testing.T) {
			s := startProxy(t, up.URL, o)
			var wg sync.WaitGroup
			for _, f := range fs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Post(s.URL+f.Path, "application/json", bytes.NewReader(f.RequestBody))
					if err == nil {
						new(bytes.Buffer).ReadFrom(resp.Body) // a cut stream ends in an error
						resp.Body.Close()
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(s.URL + "/v1/models?limit=2")
				if err == nil {
					resp.Body.Close()
				}
			}()
			wg.Wait()
			res, err := s.stop()
			if err != nil {
				t.Fatal(err)
			}
			rep, data := s.verifyEvents()
			if n := rep.Count(eventlog.SevTampered) + rep.Count(eventlog.SevUnsigned); n > 0 || rep.Count(eventlog.SevIncomplete) != 1 {
				t.Fatalf("want only the cut streams' incompleteness: %v\n%s", rep.Findings, data)
			}
			evs := logEvents(t, data)
			_, xs, _ := s.cassette()
			byX := map[int64][]*eventlog.Event{}
			for _, e := range evs {
				if e.Wire != nil {
					if e.Wire.Cassette != derive.CassetteFile || e.Wire.X < 1 {
						t.Errorf("%s: wire %+v", e.ID, e.Wire)
					}
					byX[e.Wire.X] = append(byX[e.Wire.X], e)
				}
			}
			seen := 0
			for _, x := range xs {
				got := byX[x.X]
				if x.Request.Method == http.MethodGet {
					if len(got) != 1 || got[0].Kind != eventlog.KindNotification || got[0].Method != derive.MethodHTTPExchange ||
						!strings.Contains(string(got[0].Payload), `"path":"/v1/models?limit=2"`) || !strings.Contains(string(got[0].Payload), `"status":200`) {
						t.Errorf("exchange %d (GET): events %v", x.X, got)
					}
					continue
				}
				var f *fixture
				for i := range fs {
					if bytes.Equal(fs[i].RequestBody, x.Request.Body()) {
						f = &fs[i]
					}
				}
				if f == nil {
					t.Fatalf("exchange %d: no fixture sent %q", x.X, x.Request.Body())
				}
				seen++
				if len(got) != 2 || got[0].Kind != eventlog.KindModelInput || got[1].Kind != eventlog.KindModelOutput || got[1].Input != got[0].ID || got[0].Seq >= got[1].Seq {
					t.Fatalf("%s: events %v", f.Scenario, got)
				}
				_, in, out := modelapi.Read(modelapi.Exchange{Method: f.Method, Path: f.Path, RequestBody: f.RequestBody, Status: f.Status, ContentType: f.ContentType, ResponseBody: f.ResponseBody, Cut: f.Cut})
				if string(got[0].Payload) != string(in.Payload()) || got[0].Source != eventlog.SourceObserved {
					t.Errorf("%s: model_input %s\nwant %s", f.Scenario, got[0].Payload, in.Payload())
				}
				if f.Cut {
					var o modelapi.Output
					json.Unmarshal(got[1].Payload, &o)
					if o.Status != modelapi.StatusPartial || !strings.Contains(strings.Join(o.Problems, "; "), "the response cut off by the upstream") || o.Body != out.Body {
						t.Errorf("%s: cut stream gave %s", f.Scenario, got[1].Payload)
					}
					continue
				}
				if string(got[1].Payload) != string(out.Payload()) {
					t.Errorf("%s: model_output %s\nwant %s", f.Scenario, got[1].Payload, out.Payload())
				}
			}
			if seen != len(fs) {
				t.Errorf("%d model calls in the cassette, %d sent", seen, len(fs))
			}
			if !strings.Contains(res.Failure, "response cut off by the upstream") {
				t.Errorf("failure %q", res.Failure)
			}
			again := rederive(t, s, evs)
			if !bytes.Equal(again, data) {
				t.Errorf("re-derived log differs from the live one:\n%s\nlive:\n%s", again, data)
			}
		})
	}
}

// TestModelEventsNoAnswer: a model call the upstream never answers gives a
// model_output of status error (witness_no_answer) linked to its input,
// and re-derives alike.
func TestModelEventsNoAnswer(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	s := startProxy(t, url, Options{Deriver: derive.ModelDeriver{}})
	resp, body := post(t, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	rep, data := s.verifyEvents()
	if n := rep.Count(eventlog.SevTampered) + rep.Count(eventlog.SevUnsigned); n > 0 || rep.Count(eventlog.SevIncomplete) != 1 {
		t.Fatalf("want only the failure: %v", rep.Findings)
	}
	evs := logEvents(t, data)
	if len(evs) != 4 || evs[1].Kind != eventlog.KindModelInput || evs[2].Kind != eventlog.KindModelOutput || evs[2].Input != evs[1].ID {
		t.Fatalf("%s", data)
	}
	for _, want := range []string{`"status":"error"`, `"http_status":502`, `"type":"witness_no_answer"`, `no answer from the upstream: upstream: `} {
		if !strings.Contains(string(evs[2].Payload), want) {
			t.Errorf("no %s in %s", want, evs[2].Payload)
		}
	}
	if again := rederive(t, s, evs); !bytes.Equal(again, data) {
		t.Errorf("re-derived:\n%s\nlive:\n%s", again, data)
	}
}

// TestModelEventsTruncated: a body over derive.MaxDeriveBody is read as far as
// held, and the payload says so; the event is not complete.
func TestModelEventsTruncated(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		new(bytes.Buffer).ReadFrom(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	}))
	defer up.Close()
	s := startProxy(t, up.URL, Options{Deriver: derive.ModelDeriver{}})
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", derive.MaxDeriveBody) + `"}]}`
	post(t, s.URL+"/v1/chat/completions", big, nil)
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, data := s.verifyEvents()
	evs := logEvents(t, data)
	in := string(evs[1].Payload)
	if !strings.Contains(in, `"status":"invalid"`) || !strings.Contains(in, "the deriver's limit") {
		t.Errorf("input %.300s", in)
	}
	if !strings.Contains(string(evs[2].Payload), `"text":"ok"`) {
		t.Errorf("output %s", evs[2].Payload)
	}
}

// docFields returns every name written in backticks in a doc file
// (`{"bytes","sha256"}` gives bytes and sha256).
func docFields(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "formats", file))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	text := strings.ReplaceAll(string(b), "```", "") // code fences would pair the wrong backticks
	for _, span := range regexp.MustCompile("`[^`\n]+`").FindAllString(text, -1) {
		for _, n := range regexp.MustCompile(`[a-z_][a-z0-9_]*`).FindAllString(span, -1) {
			names[n] = true
		}
	}
	return names
}

// keys collects the member names of v at every depth, but for members
// whose values are kept as sent (their names are the provider's).
func keys(v any, asSent map[string]bool, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out[k] = true
			if !asSent[k] {
				keys(x, asSent, out)
			}
		}
	case []any:
		for _, x := range v {
			keys(x, asSent, out)
		}
	}
}

// TestDocsNameRealFields records the fixture exchanges through the proxy
// and checks that every field of the real files is in the format docs:
// the model event payloads and their envelope (model-events.md,
// events.md), the HTTP cassette's header and records (http-cassette.md);
// and that the fixtures exercise the output fields the docs lead with.
func TestDocsNameRealFields(t *testing.T) {
	fs := readFixtures(t)
	s := startProxy(t, fixtureUpstream(t, fs).URL, Options{Deriver: derive.ModelDeriver{}})
	for _, f := range fs {
		resp, err := http.Post(s.URL+f.Path, "application/json", bytes.NewReader(f.RequestBody))
		if err == nil {
			new(bytes.Buffer).ReadFrom(resp.Body)
			resp.Body.Close()
		}
	}
	http.Get(s.URL + "/v1/models")
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, data := s.verifyEvents()
	_, _, cas := s.cassette()

	asSent := map[string]bool{"usage": true, "error": true, "params": true, "parameters": true, "extra": true, "value": true, "input": true, "reasoning": true, "other": true}
	check := func(what string, doc map[string]bool, seen map[string]bool) {
		for k := range seen {
			if !doc[k] {
				t.Errorf("%s: field %q is in the real file, not in the doc", what, k)
			}
		}
	}
	model, envelope := docFields(t, "model-events.md"), docFields(t, "events.md")
	payloadSeen, envSeen := map[string]bool{}, map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		for k := range ev {
			envSeen[k] = true
		}
		if w, ok := ev["wire"].(map[string]any); ok {
			keys(w, nil, envSeen)
		}
		if ev["kind"] == "model_input" || ev["kind"] == "model_output" || ev["kind"] == "notification" {
			keys(ev["payload"], asSent, payloadSeen)
		}
	}
	check("model event payloads (model-events.md)", model, payloadSeen)
	check("event envelope (events.md)", envelope, envSeen)
	for _, want := range []string{"text", "tool_calls", "reasoning", "stop_reason", "usage", "error", "problems", "events", "item_id", "arguments", "system", "tools", "messages", "params", "request_bytes"} {
		if !payloadSeen[want] {
			t.Errorf("the fixtures never gave %q", want)
		}
	}
	casSeen := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(cas), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		for k := range rec {
			casSeen[k] = true
		}
	}
	check("HTTP cassette (http-cassette.md)", docFields(t, "http-cassette.md"), casSeen)
	if len(payloadSeen) < 30 || len(casSeen) < 15 {
		t.Errorf("only %d payload and %d cassette fields seen", len(payloadSeen), len(casSeen))
	}
}

// FuzzEventsFromCassette: any bytes as an HTTP cassette are refused or
// derived, never a panic, and derived twice alike. The seed is a real
// cassette (testdata/fixtures-cassette.jsonl: two fixture exchanges
// through the proxy, a JSON answer with tool calls and a stream cut by the
// server; rewritten by TestSeedCassette -update) and pieces of it. (Small:
// the fuzzer minimises a seed that finds new coverage, for up to a minute.)
func FuzzEventsFromCassette(f *testing.F) {
	cas, err := os.ReadFile(filepath.Join("testdata", "fixtures-cassette.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cas)
	lines := bytes.SplitAfter(cas, []byte("\n"))
	f.Add(bytes.Join(lines[:len(lines)/2], nil))
	f.Add(lines[0])
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b bytes.Buffer
		errA := derive.EventsFromCassette(bytes.NewReader(data), "c.jsonl", &a, derive.Options{})
		errB := derive.EventsFromCassette(bytes.NewReader(data), "c.jsonl", &b, derive.Options{})
		if (errA == nil) != (errB == nil) || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("two derivations differ: %v / %v", errA, errB)
		}
	})
}

var updateSeed = flag.Bool("update", false, "rewrite testdata/fixtures-cassette.jsonl")

// TestSeedCassette checks that the fuzz seed is a real cassette that
// derives: two model calls, each a model_input and a linked model_output,
// one cut off. With -update it records the fixture exchanges chat-tools
// and chat-cut one after the other with frozen time into it again.
func TestSeedCassette(t *testing.T) {
	file := filepath.Join("testdata", "fixtures-cassette.jsonl")
	if *updateSeed {
		fs := readFixtures(t)
		s := startProxy(t, fixtureUpstream(t, fs).URL, Options{Deriver: derive.ModelDeriver{}, HeaderKey: []byte("a fixed key for the fuzz seed")})
		for _, x := range []fixture{fs[0], fs[4]} {
			resp, err := http.Post(s.URL+x.Path, "application/json", bytes.NewReader(x.RequestBody))
			if err == nil {
				new(bytes.Buffer).ReadFrom(resp.Body)
				resp.Body.Close()
			}
		}
		if _, err := s.stop(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(s.Dir, derive.CassetteFile))
		if err != nil {
			t.Fatal(err)
		}
		got = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`).ReplaceAll(got, []byte("127.0.0.1:PORT"))
		got = regexp.MustCompile(`\["Date","[^"]*"\]`).ReplaceAll(got, []byte(`["Date","Tue, 01 Dec 2026 00:00:00 GMT"]`))
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := derive.EventsFromCassette(f, file, &out, derive.Options{}); err != nil {
		t.Fatal(err)
	}
	evs := logEvents(t, out.Bytes())
	pairs := 0
	for i, e := range evs {
		if e.Kind == eventlog.KindModelOutput {
			for _, in := range evs[:i] {
				if in.ID == e.Input && in.Kind == eventlog.KindModelInput && in.Wire.X == e.Wire.X {
					pairs++
				}
			}
		}
	}
	if len(evs) != 6 || pairs != 2 || evs[5].End == nil || !strings.Contains(evs[5].End.Failure, "response cut off by the upstream") {
		t.Errorf("%d events, %d linked pairs:\n%s", len(evs), pairs, out.Bytes())
	}
}
