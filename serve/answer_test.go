package serve

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
)

// lines splits a transcript into its lines.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestServeEveryMethodFromCassette: resources, prompts, completions,
// logging/setLevel and a recorded ping are served like tools/call: exact
// canonical matching, the recorded bytes with the incoming id, recorded
// errors included; anything else of the same method is a miss.
func TestServeEveryMethodFromCassette(t *testing.T) {
	type exchange struct{ req, resp string }
	xs := []exchange{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"demo://resource/static/document/architecture.md","name":"architecture.md","mimeType":"text/markdown"}],"nextCursor":"2"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{"cursor":"2"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"resources":[]}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`,
			`{"jsonrpc":"2.0","id":3,"result":{"resourceTemplates":[{"uriTemplate":"demo://resource/dynamic/text/{index}","name":"Dynamic Text Resource"}]}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"demo://resource/dynamic/text/1"}}`,
			`{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"demo://resource/dynamic/text/1","mimeType":"text/plain","text":"Resource 1: This is a plaintext resource"}]}}`},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"demo://nope"}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32002,"message":"Resource demo://nope not found","data":{"uri":"demo://nope"}}}`},
		{`{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"demo://resource/dynamic/text/1"}}`,
			`{"jsonrpc":"2.0","id":6,"result":{}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"resources/unsubscribe","params":{"uri":"demo://resource/dynamic/text/1"}}`,
			`{"jsonrpc":"2.0","id":7,"result":{}}`},
		{`{"jsonrpc":"2.0","id":8,"method":"prompts/list"}`,
			`{"jsonrpc":"2.0","id":8,"result":{"prompts":[{"name":"simple-prompt","description":"A prompt with no arguments"},{"name":"args-prompt","arguments":[{"name":"city","required":true}]}]}}`},
		{`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"args-prompt","arguments":{"city":"Paris"}}}`,
			`{"jsonrpc":"2.0","id":9,"result":{"messages":[{"role":"user","content":{"type":"text","text":"What's weather in Paris?"}}]}}`},
		{`{"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"no-such-prompt"}}`,
			`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"MCP error -32602: Prompt no-such-prompt not found"}}`},
		{`{"jsonrpc":"2.0","id":11,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"args-prompt"},"argument":{"name":"city","value":"Pa"}}}`,
			`{"jsonrpc":"2.0","id":11,"result":{"completion":{"values":["Paris"],"total":1,"hasMore":false}}}`},
		{`{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"debug"}}`,
			`{"jsonrpc":"2.0","id":12,"result":{}}`},
		{`{"jsonrpc":"2.0","id":13,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":13,"result":{"_meta":{"recorded":"ping"}}}`},
	}
	var cas []string
	for _, x := range xs {
		cas = append(cas, "c2s "+x.req, "s2c "+x.resp)
	}
	// a notification the server sent in a turn stays in that turn
	cas = append(cas[:11], append([]string{`s2c {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://resource/dynamic/text/1"}}`}, cas[11:]...)...)
	p := writeCassette(t, cas...)
	var steps []step
	var want []string
	for i, x := range xs {
		id := fmt.Sprintf(`"q%d"`, i)
		req, _ := mcp.ReplaceID([]byte(x.req), []byte(id))
		resp, _ := mcp.ReplaceID([]byte(x.resp), []byte(id))
		n := 1
		if i == 5 {
			n = 2
			want = append(want, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://resource/dynamic/text/1"}}`)
		}
		steps = append(steps, step{string(req), n})
		want = append(want, string(resp))
	}
	got, stderr, res, err := serveSession(t, p, steps)
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	if g, w := lines(got), want; strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("served\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if res.Served != len(xs) || res.Misses != 0 || res.Pings != 0 {
		t.Errorf("result %+v", res)
	}

	// each method, asked otherwise, is a miss with a diff
	for _, c := range []struct{ req, diff string }{
		{`{"jsonrpc":"2.0","id":"m","method":"resources/read","params":{"uri":"demo://resource/dynamic/text/2"}}`, `+     "uri": "demo://resource/dynamic/text/2"`},
		{`{"jsonrpc":"2.0","id":"m","method":"prompts/get","params":{"name":"args-prompt","arguments":{"city":"Lyon"}}}`, `+       "city": "Lyon"`},
		{`{"jsonrpc":"2.0","id":"m","method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"args-prompt"},"argument":{"name":"city","value":"Ly"}}}`, `+       "value": "Ly"`},
		{`{"jsonrpc":"2.0","id":"m","method":"logging/setLevel","params":{"level":"error"}}`, `+     "level": "error"`},
		{`{"jsonrpc":"2.0","id":"m","method":"resources/subscribe","params":{"uri":"demo://other"}}`, `+     "uri": "demo://other"`},
		{`{"jsonrpc":"2.0","id":"m","method":"resources/templates/list","params":{"cursor":"x"}}`, `+     "cursor": "x"`},
		{`{"jsonrpc":"2.0","id":"m","method":"prompts/list","params":{"cursor":"x"}}`, `+     "cursor": "x"`},
	} {
		got, stderr, res, err := serveSession(t, p, []step{{c.req, 1}})
		if exitcode.Of(err) != exitcode.Incomplete || res.Misses != 1 || !strings.Contains(got, `"id":"m","error":{"code":-32050`) {
			t.Errorf("%s: err %v res %+v out %s", c.req, err, res, got)
		}
		if !strings.Contains(stderr, c.diff) {
			t.Errorf("%s: stderr lacks %q:\n%s", c.req, c.diff, stderr)
		}
	}
}

// sampling is a recording of a tools/call whose server asked the host for
// a sampling/createMessage, logged, then answered with what the model said.
var sampling = []string{
	`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"hi"}}}`,
	`s2c {"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}`,
	`c2s {"jsonrpc":"2.0","id":0,"result":{"model":"stub","role":"assistant","content":{"type":"text","text":"hello"},"_meta":{"requestId":"r-1"}}}`,
	`s2c {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sampled"}}`,
	`s2c {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"LLM said: hello"}]}}`,
}

const (
	sampleCall   = `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"hi"}}}`
	sampleAsk    = `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}`
	sampleLog    = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sampled"}}`
	sampleResult = `{"jsonrpc":"2.0","id":"c","result":{"content":[{"type":"text","text":"LLM said: hello"}]}}`
)

// The host answers the sampling request as recorded (another _meta, other
// key order): the rest of the turn is replayed after the answer, not before.
func TestServeSamplingAnswerMatches(t *testing.T) {
	p := writeCassette(t, sampling...)
	got, stderr, res, err := serveSession(t, p, []step{
		{sampleCall, 1},
		{`{"jsonrpc":"2.0","id":0,"result":{"_meta":{"requestId":"r-2"},"role":"assistant","model":"stub","content":{"text":"hello","type":"text"}}}`, 2},
	})
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	want := []string{sampleAsk, sampleLog, sampleResult}
	if strings.Join(lines(got), "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if res.Asked != 1 || res.Matched != 1 || res.Misses != 0 {
		t.Errorf("result %+v", res)
	}
}

// Until the host answers, serve sends nothing of what the recording shows
// after the answer; a host that closes stdin with its request held up by
// the unanswered sampling request is a miss.
func TestServeWaitsForTheAnswer(t *testing.T) {
	s, err := LoadFile(writeCassette(t, sampling...))
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	res, err := s.Serve(Options{Stdin: strings.NewReader(sampleCall + "\n"), Stdout: &out, Stderr: &stderr})
	ls := lines(out.String())
	if len(ls) != 2 || ls[0] != sampleAsk || !strings.HasPrefix(ls[1], `{"jsonrpc":"2.0","id":"c","error":{"code":-32050,`) ||
		!strings.Contains(ls[1], "without answering the server's sampling/createMessage request (id 0)") {
		t.Errorf("out\n%s", out.String())
	}
	if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 || res.Misses != 1 {
		t.Errorf("err %v res %+v\n%s", err, res, stderr.String())
	}
}

// A different sampling answer is a miss: the diff on stderr, the tools/call
// answered with a JSON-RPC error instead of the recorded result, exit 4.
func TestServeSamplingAnswerDiffers(t *testing.T) {
	p := writeCassette(t, sampling...)
	got, stderr, res, err := serveSession(t, p, []step{
		{sampleCall, 1},
		{`{"jsonrpc":"2.0","id":0,"result":{"model":"stub","role":"assistant","content":{"type":"text","text":"goodbye"}}}`, 1},
	})
	ls := lines(got)
	if len(ls) != 2 || ls[0] != sampleAsk || !strings.HasPrefix(ls[1], `{"jsonrpc":"2.0","id":"c","error":{"code":-32050,"message":"witness serve: the cassette `) ||
		!strings.Contains(ls[1], `cannot answer this tools/call request: the host's answer to the server's sampling/createMessage request (id 0) differs from the recorded answer`) {
		t.Errorf("out\n%s", got)
	}
	if exitcode.Of(err) != exitcode.Incomplete || res.Misses != 1 || res.Differed != 1 || res.Matched != 0 {
		t.Errorf("err %v res %+v", err, res)
	}
	for _, w := range []string{
		"witness: serve: miss: the host's answer to the server's sampling/createMessage request (id 0) differs from the recorded answer (cassette line 4), in the tools/call request (id \"c\")",
		`recorded answer: result {"content":{"text":"hello","type":"text"},"model":"stub","role":"assistant"}`,
		`host answer:     result {"content":{"text":"goodbye","type":"text"},"model":"stub","role":"assistant"}`,
		"diff (-recorded +incoming):\n  {\n    \"result\": {\n      \"content\": {\n-       \"text\": \"hello\",\n+       \"text\": \"goodbye\",",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "1 host answer(s) to server requests differ from") {
		t.Errorf("error %v", err)
	}
}

// elicitation is the case: the user answered "Ada" when recorded.
var elicitation = []string{
	`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}`,
	`s2c {"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`,
	`c2s {"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"Ada"}}}`,
	`s2c {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello, Ada"}]}}`,
}

func TestServeElicitationAdaVersusMallory(t *testing.T) {
	p := writeCassette(t, elicitation...)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}`
	got, stderr, res, err := serveSession(t, p, []step{{call, 1}, {`{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"Ada"}}}`, 1}})
	if err != nil || !strings.HasSuffix(got, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Hello, Ada"}]}}`+"\n") || res.Matched != 1 {
		t.Fatalf("Ada: err %v res %+v\n%s\n%s", err, res, got, stderr)
	}
	got, stderr, res, err = serveSession(t, p, []step{{call, 1}, {`{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"Mallory"}}}`, 1}})
	if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 {
		t.Fatalf("Mallory: err %v res %+v", err, res)
	}
	if strings.Contains(got, "Hello, Ada") || !strings.Contains(got, `{"jsonrpc":"2.0","id":5,"error":{"code":-32050,`) {
		t.Errorf("Mallory got the recorded result, or no error:\n%s", got)
	}
	if !strings.Contains(stderr, "-       \"name\": \"Ada\"\n+       \"name\": \"Mallory\"") {
		t.Errorf("no diff:\n%s", stderr)
	}
	// declining where the user accepted differs too; an error answer where
	// a result was recorded too
	for _, ans := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"action":"decline"}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"Ada","_meta":{"x":1}}}}`, // _meta only volatile at the top
	} {
		_, stderr, res, err := serveSession(t, p, []step{{call, 1}, {ans, 1}})
		if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 {
			t.Errorf("%s: err %v res %+v\n%s", ans, err, res, stderr)
		}
	}
}

// A recorded error answer matches the same error.
func TestServeRecordedErrorAnswer(t *testing.T) {
	rec := append([]string(nil), elicitation...)
	rec[2] = `c2s {"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`
	p := writeCassette(t, rec...)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}`
	_, stderr, res, err := serveSession(t, p, []step{{call, 1}, {`{"jsonrpc":"2.0","id":7,"error":{"message":"Method not found","code":-32601}}`, 1}})
	if err != nil || res.Matched != 1 {
		t.Errorf("err %v res %+v\n%s", err, res, stderr)
	}
	_, stderr, res, err = serveSession(t, p, []step{{call, 1}, {`{"jsonrpc":"2.0","id":7,"result":{"action":"cancel"}}`, 1}})
	if exitcode.Of(err) != exitcode.Incomplete || !strings.Contains(stderr, "recorded answer: error {\"code\":-32601") {
		t.Errorf("err %v res %+v\n%s", err, res, stderr)
	}
}

// roots/list sent after notifications/initialized: a different answer is a
// miss with a diff (there is no host request to answer with an error), the
// rest of the turn is not replayed; an unanswered one is counted, an error
// only with RequireAll.
func TestServeRootsAnswer(t *testing.T) {
	rec := []string{
		`c2s {"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`s2c {"jsonrpc":"2.0","id":0,"method":"roots/list"}`,
		`c2s {"jsonrpc":"2.0","id":0,"result":{"roots":[{"uri":"file:///work","name":"work"}]}}`,
		`s2c {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"1 root"}}`,
	}
	p := writeCassette(t, rec...)
	init := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	got, stderr, res, err := serveSession(t, p, []step{{init, 1}, {`{"jsonrpc":"2.0","id":0,"result":{"roots":[{"name":"work","uri":"file:///work"}]}}`, 1}})
	if err != nil || !strings.HasSuffix(got, `"data":"1 root"}}`+"\n") || res.Matched != 1 {
		t.Fatalf("same roots: err %v res %+v\n%s\n%s", err, res, got, stderr)
	}
	got, stderr, res, err = serveSession(t, p, []step{{init, 1}, {`{"jsonrpc":"2.0","id":0,"result":{"roots":[{"uri":"file:///home","name":"work"}]}}`, 0}})
	if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 || strings.Contains(got, "1 root") || strings.Contains(got, "error") {
		t.Errorf("other roots: err %v res %+v\n%s", err, res, got)
	}
	if !strings.Contains(stderr, "in the turn of notifications/initialized (cassette line 2)") || !strings.Contains(stderr, `+         "uri": "file:///home"`) {
		t.Errorf("stderr:\n%s", stderr)
	}
	// never answered: did less than the recording
	_, stderr, res, err = serveSession(t, p, []step{{init, 1}})
	if err != nil || res.Unanswered != 1 || !strings.Contains(stderr, "closed its input without answering the server's roots/list request (id 0, cassette line 3)") {
		t.Errorf("unanswered: err %v res %+v\n%s", err, res, stderr)
	}
	_, _, res, err = serveSessionOpts(t, p, Options{RequireAll: true}, []step{{init, 1}})
	if exitcode.Of(err) != exitcode.Incomplete || res.Unanswered != 1 {
		t.Errorf("unanswered, require-all: err %v res %+v", err, res)
	}
}

// A host that never answers, though it keeps stdin open: after the bounded
// wait, the held-up request gets an error and serve exits 4.
func TestServeHostNeverAnswers(t *testing.T) {
	p := writeCassette(t, sampling...)
	got, stderr, res, err := serveSessionOpts(t, p, Options{AnswerTimeout: 20 * time.Millisecond}, []step{{sampleCall, 2}})
	ls := lines(got)
	if len(ls) != 2 || ls[0] != sampleAsk || !strings.Contains(ls[1], `"id":"c","error":{"code":-32050,`) || !strings.Contains(ls[1], "did not answer the server's sampling/createMessage request (id 0) within 20ms") {
		t.Errorf("out\n%s", got)
	}
	if exitcode.Of(err) != exitcode.Incomplete || res.Differed != 1 || !strings.Contains(stderr, "within 20ms") {
		t.Errorf("err %v res %+v\n%s", err, res, stderr)
	}
	// a late answer is not judged again
	_, stderr, res, _ = serveSessionOpts(t, p, Options{AnswerTimeout: 20 * time.Millisecond}, []step{{sampleCall, 2}, {`{"jsonrpc":"2.0","id":0,"result":{"model":"stub","role":"assistant","content":{"type":"text","text":"hello"}}}`, 0}})
	if res.Differed != 1 || res.Ignored != 1 || !strings.Contains(stderr, "answers no recorded server request still waiting") {
		t.Errorf("late: res %+v\n%s", res, stderr)
	}
}

// Two turns whose server reused id 0, asked concurrently: the second
// request gets a fresh id (the first is still waiting), both answers match,
// each turn completes.
func TestServeFreshIDOnCollision(t *testing.T) {
	rec := []string{
		`c2s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"n":1}}}`,
		`s2c {"jsonrpc":"2.0","id":0,"method":"ping"}`,
		`c2s {"jsonrpc":"2.0","id":0,"result":{}}`,
		`s2c {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"one"}]}}`,
		`c2s {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"n":2}}}`,
		`s2c {"jsonrpc":"2.0","id":0,"method":"ping"}`,
		`c2s {"jsonrpc":"2.0","id":0,"result":{}}`,
		`s2c {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}`,
	}
	p := writeCassette(t, rec...)
	got, stderr, res, err := serveSession(t, p, []step{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"n":1}}}`, 1},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"n":2}}}`, 1},
		{`{"jsonrpc":"2.0","id":"witness-serve-1","result":{}}`, 1},
		{`{"jsonrpc":"2.0","id":0,"result":{}}`, 1},
	})
	want := []string{
		`{"jsonrpc":"2.0","id":0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"witness-serve-1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"one"}]}}`,
	}
	if err != nil || strings.Join(lines(got), "\n") != strings.Join(want, "\n") || res.Matched != 2 {
		t.Errorf("err %v res %+v\ngot\n%s\nwant\n%s\n%s", err, res, got, strings.Join(want, "\n"), stderr)
	}
}

func FuzzAnswerOf(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"name":"Ada","n":1.0},"_meta":{"a":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"x","data":[1e400]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":[]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := mcp.Parse(line)
		if err != nil || m.Kind != mcp.KindResponse {
			return
		}
		a1, err1 := answerOf(m)
		a2, err2 := answerOf(m)
		if (err1 == nil) != (err2 == nil) || a1 != a2 {
			t.Fatalf("AnswerOf not deterministic: %v %v / %v %v", a1, err1, a2, err2)
		}
		if err1 != nil {
			return
		}
		if a1.Member != "result" && a1.Member != "error" {
			t.Fatalf("member %q", a1.Member)
		}
		if a1.Member == "result" && strings.HasPrefix(a1.Value, "{") {
			if _, ok := mcp.Member([]byte(a1.Value), "_meta"); ok {
				t.Fatalf("top-level _meta kept: %s", a1.Value)
			}
		}
		// the answer's key is a fixed point: matching it again gives itself
		re, err := mcp.Parse([]byte(`{"jsonrpc":"2.0","id":0,"` + a1.Member + `":` + a1.Value + `}`))
		if err != nil {
			return // canonical form of an odd number may not re-parse strictly
		}
		if a3, err := answerOf(re); err != nil || a3 != a1 {
			t.Fatalf("not a fixed point: %v -> %v (%v)", a1, a3, err)
		}
	})
}
