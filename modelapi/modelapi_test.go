package modelapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/jsontree"
)

func TestDetect(t *testing.T) {
	cases := []struct {
		method, path string
		want         API
	}{
		{"POST", "/v1/chat/completions", apiOpenAIChat},
		{"POST", "/openai/v1/chat/completions?api-version=2025-01-01", apiOpenAIChat},
		{"POST", "/openai/deployments/gpt4o/chat/completions", apiOpenAIChat},
		{"POST", "/v1/responses", apiOpenAIResponses},
		{"POST", "/gateway/openai/responses", apiOpenAIResponses},
		{"POST", "/v1/messages", apiAnthropicMessages},
		{"POST", "/anthropic/v1/messages", apiAnthropicMessages},
		{"GET", "/v1/chat/completions", APINone},
		{"POST", "/v1/messages/count_tokens", APINone},
		{"POST", "/v1/threads/t1/messages", APINone},
		{"POST", "/v1/responses/resp_1/cancel", APINone},
		{"GET", "/v1/responses/resp_1", APINone},
		{"POST", "/v1/embeddings", APINone},
		{"post", "/v1/messages", APINone},
	}
	for _, c := range cases {
		if got := Detect(c.method, c.path); got != c.want {
			t.Errorf("Detect(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// fixtures returns the recorded exchanges by scenario.
func fixtures(t *testing.T) map[string]recorded {
	t.Helper()
	out := map[string]recorded{}
	for _, r := range readRecords(t, filepath.Join("testdata", "exchanges.jsonl")) {
		out[r.Scenario] = r
	}
	return out
}

func TestParseRequestShapes(t *testing.T) {
	chat := `{"model":"gpt-4o","temperature":0.2,"max_tokens":100,"tool_choice":"auto","stream":true,
	"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"/x\"}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"file body"}],
	"tools":[{"type":"function","function":{"name":"read","description":"Reads","parameters":{"type":"object"},"strict":true}}]}`
	in, err := parseRequest(apiOpenAIChat, []byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	p := string(in.Payload())
	for _, want := range []string{`"system":["Be brief."]`, `"stream":true`, `"params":{"max_tokens":100,"temperature":0.2,"tool_choice":"auto"}`,
		`{"data_chars":12,"data_sha256":"`, `"media_type":"image/png","type":"image"`, `"call":{"arguments":"{\"path\":\"/x\"}","id":"call_1","input":{"path":"/x"},"name":"read"}`,
		`{"call_id":"call_1","result":[{"text":"file body","type":"text"}],"type":"tool_result"}`,
		`"tools":[{"description":"Reads","extra":{"strict":true},"name":"read","parameters":{"type":"object"},"type":"function"}]`} {
		if !strings.Contains(p, want) {
			t.Errorf("chat payload lacks %s:\n%s", want, p)
		}
	}
	if strings.Contains(p, "iVBORw0KGgo") {
		t.Errorf("inline image data in the payload: %s", p)
	}

	resp := `{"model":"gpt-4o","instructions":"Use tools.","previous_response_id":"resp_0","input":[{"type":"function_call_output","call_id":"call_9","output":"42"},{"role":"user","content":[{"type":"input_text","text":"and now?"}]}],
	"tools":[{"type":"function","name":"calc","parameters":{"type":"object"}},{"type":"web_search_preview"}]}`
	in, err = parseRequest(apiOpenAIResponses, []byte(resp))
	if err != nil {
		t.Fatal(err)
	}
	p = string(in.Payload())
	for _, want := range []string{`"previous_response_id":"resp_0"`, `"system":["Use tools."]`, `{"call_id":"call_9","result":[{"text":"42","type":"text"}],"type":"tool_result"}`,
		`{"type":"web_search_preview","value":{"type":"web_search_preview"}}`, `"name":"calc"`} {
		if !strings.Contains(p, want) {
			t.Errorf("responses payload lacks %s:\n%s", want, p)
		}
	}

	anth := `{"model":"claude","max_tokens":512,"system":[{"type":"text","text":"Sys A. "},{"type":"text","text":"Sys B.","cache_control":{"type":"ephemeral"}}],
	"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{ "path" : "/x" }}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"body"}],"is_error":true},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}}]}],
	"tools":[{"name":"read","description":"Reads","input_schema":{"type":"object"}}]}`
	in, err = parseRequest(apiAnthropicMessages, []byte(anth))
	if err != nil {
		t.Fatal(err)
	}
	p = string(in.Payload())
	for _, want := range []string{`"system":["Sys A. Sys B."]`, `"arguments":"{ \"path\" : \"/x\" }"`, `"input":{"path":"/x"}`, `"is_error":true`, `"media_type":"image/jpeg"`, `"params":{"max_tokens":512}`, `"parameters":{"type":"object"}`} {
		if !strings.Contains(p, want) {
			t.Errorf("anthropic payload lacks %s:\n%s", want, p)
		}
	}
}

func TestParseRequestErrorsNameTheField(t *testing.T) {
	cases := []struct {
		api  API
		body string
		want string // in the error text
	}{
		{apiOpenAIChat, `{"model":"m","messages":{}}`, "1:25: $.messages: want a array, got object"},
		{apiOpenAIChat, `{"model":"m","messages":[{"role":"user","content":3}]}`, "$.messages[0].content: want a string or an array of content parts"},
		{apiOpenAIChat, `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "$.messages[0].tool_call_id: missing"},
		{apiOpenAIChat, `{"model":7,"messages":[]}`, "$.model: want a string, got number"},
		{apiOpenAIChat, `{"model":"m","messages":[],"stream":"yes"}`, "$.stream: want a boolean, got string"},
		{apiOpenAIChat, `{"model":"m","messages":[],"tools":[{"type":"function","function":{"description":"x"}}]}`, "$.tools[0].function.name: missing"},
		{apiAnthropicMessages, `{"model":"m","system":5,"messages":[]}`, "$.system: want a string or an array of blocks"},
		{apiOpenAIResponses, `{"input":[{"type":"function_call_output","output":"x"}]}`, "$.input[0].call_id: missing"},
		{apiOpenAIChat, `{"model":"m",`, "request body:1:14: not valid JSON"},
		{apiOpenAIChat, strings.Repeat("[", 300), "nesting deeper than 256 levels"},
		{apiOpenAIChat, `{"model":"m","messages":[],"x":` + strings.Repeat("[", 230) + strings.Repeat("]", 230) + `}`, "nesting deeper than 224 levels"},
	}
	for _, c := range cases {
		_, err := parseRequest(c.api, []byte(c.body))
		var je *jsontree.Error
		if err == nil || !errors.As(err, &je) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRequest(%.60s) = %v, want a positioned error with %q", c.body, err, c.want)
		}
	}
}

func TestParseRequestAmbiguity(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"model":"a","model":"b","messages":[]}`, `"model" appears twice`},
		{`{"model":"a","Model":"b","messages":[]}`, `"Model" differs from "model" only in letter case`},
		{`{"model":"a","messages":[{"role":"user","content":"x","Content":"y"}]}`, `$.messages[0].Content`},
		{`{"model":"a","messages":[],"temperature":1e400}`, `$.temperature: number 1e400 cannot be represented exactly`},
		{`{"model":"a","messages":[],"seed":12345678901234567891}`, `number 12345678901234567891`},
		{"{\"model\":\"a\xff\",\"messages\":[]}", `invalid UTF-8 at byte 11`},
		{`{"model":"\ud800","messages":[]}`, `surrogate`},
	}
	for _, c := range cases {
		_, err := parseRequest(apiOpenAIChat, []byte(c.body))
		var ae *ambiguousError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRequest(%s) = %v, want an *AmbiguousError with %q", c.body, err, c.want)
		}
		_, in, _ := Read(Exchange{Method: "POST", Path: "/v1/chat/completions", RequestBody: []byte(c.body)})
		if in.Status != inputAmbiguous || in.Model != "" || len(in.Problems) == 0 {
			t.Errorf("Read(%s): input %s, want ambiguous with nothing read", c.body, in.Payload())
		}
	}
	// 1.0 is exact: read, canonical
	in, err := parseRequest(apiOpenAIChat, []byte(`{"model":"a","messages":[],"temperature":1.0}`))
	if err != nil || string(in.Params["temperature"]) != "1" {
		t.Errorf("temperature 1.0: %v %s", err, in.Payload())
	}
}

// outputs returns the Output Read gives for each recorded scenario.
func outputs(t *testing.T) map[string]*Output {
	out := map[string]*Output{}
	for sc, r := range fixtures(t) {
		_, _, o := Read(r.exchange())
		out[sc] = o
	}
	return out
}

// comparable drops what differs between the same answer streamed and not.
func comparable(o *Output) string {
	c := *o
	c.Streamed, c.Events, c.Body = false, 0, BodyRef{}
	return string(c.Payload())
}

func TestStreamedEqualsNonStreamed(t *testing.T) {
	outs := outputs(t)
	for _, pair := range [][2]string{{"responses-function", "responses-function-stream"}} {
		a, b := outs[pair[0]], outs[pair[1]]
		if comparable(a) != comparable(b) {
			t.Errorf("%s and %s differ:\n%s\n%s", pair[0], pair[1], comparable(a), comparable(b))
		}
	}
	// Anthropic: the same answer; arguments text differs only by the
	// whitespace the two forms were sent with, so compare the rest
	a, b := outs["anthropic-tools"], outs["anthropic-tools-stream"]
	if len(a.ToolCalls) != 1 || len(b.ToolCalls) != 1 {
		t.Fatalf("tool calls %d %d", len(a.ToolCalls), len(b.ToolCalls))
	}
	a.ToolCalls[0].Arguments, b.ToolCalls[0].Arguments = "", ""
	if comparable(a) != comparable(b) {
		t.Errorf("anthropic streamed and not differ:\n%s\n%s", comparable(a), comparable(b))
	}
	if len(a.Reasoning) != 1 || !strings.Contains(string(a.Reasoning[0]), `"signature":"c2lnbmF0dXJlLXdpdG5lc3M="`) {
		t.Errorf("thinking not kept: %s", a.Payload())
	}
}

func TestErrorsAndCuts(t *testing.T) {
	outs := outputs(t)
	cases := []struct {
		sc, status, inError, problem string
	}{
		{"chat-429", StatusError, `"code":"rate_limit_exceeded"`, ""},
		{"responses-500", StatusError, `"type":"server_error"`, ""},
		{"anthropic-429", StatusError, `"type":"rate_limit_error"`, ""},
		{"chat-error-event", StatusError, `"type":"server_error"`, ""},
		{"responses-error-event", StatusError, `"code":"server_error"`, ""},
		{"anthropic-overloaded", StatusError, `"type":"overloaded_error"`, ""},
		{"chat-cut", StatusPartial, "", "the stream was cut before its terminal event (data: [DONE])"},
		{"anthropic-cut", StatusPartial, "", "the stream was cut before its terminal event (message_stop)"},
	}
	for _, c := range cases {
		o := outs[c.sc]
		if o.Status != c.status || !strings.Contains(string(o.Error), c.inError) || (c.problem != "" && !strings.Contains(strings.Join(o.Problems, "\n"), c.problem)) {
			t.Errorf("%s: %s", c.sc, o.Payload())
		}
	}
	// what came before the cut is kept
	if o := outs["chat-cut"]; o.Text != "This answer will" {
		t.Errorf("chat-cut kept %q", o.Text)
	}
	if o := outs["anthropic-cut"]; o.Text != "This" {
		t.Errorf("anthropic-cut kept %q", o.Text)
	}
	if o := outs["chat-error-event"]; o.Text != "This ans" {
		t.Errorf("chat-error-event kept %q", o.Text)
	}
}

// assemble feeds chunks to a new assembler and returns the payload.
func assemble(api API, lim limits, chunks [][]byte, cut bool) string {
	a := newAssemblerLimits(api, lim)
	a.SetHTTPStatus(200)
	for _, c := range chunks {
		a.Feed(c)
	}
	return string(a.Finish(cut).Payload())
}

func split(b []byte, r *rand.Rand, max int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := 1 + r.Intn(max)
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func TestAnyChunkingSameOutput(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	n := 0
	for sc, rec := range fixtures(t) {
		if !isEventStream(rec.ContentType) {
			continue
		}
		n++
		api := Detect(rec.Method, rec.Path)
		whole := assemble(api, defaultLimits(), [][]byte{rec.ResponseBody}, false)
		bytewise := assemble(api, defaultLimits(), split(rec.ResponseBody, r, 1), false)
		if bytewise != whole {
			t.Errorf("%s: byte by byte differs:\n%s\n%s", sc, bytewise, whole)
		}
		for i := 0; i < 20; i++ {
			if got := assemble(api, defaultLimits(), split(rec.ResponseBody, r, 40), false); got != whole {
				t.Fatalf("%s: a random chunking differs:\n%s\n%s", sc, got, whole)
			}
		}
		// the same stream with CRLF line ends reads the same
		crlf := bytes.ReplaceAll(rec.ResponseBody, []byte("\n"), []byte("\r\n"))
		if got := assemble(api, defaultLimits(), split(crlf, r, 7), false); stripBody(got) != stripBody(whole) {
			t.Errorf("%s: CRLF differs:\n%s\n%s", sc, got, whole)
		}
	}
	if n < 8 {
		t.Fatalf("only %d streamed fixtures", n)
	}
}

func stripBody(p string) string {
	var m map[string]any
	json.Unmarshal([]byte(p), &m)
	delete(m, "body")
	b, _ := json.Marshal(m)
	return string(b)
}

func TestSSEParser(t *testing.T) {
	var got []string
	p := sseParser{limit: 1 << 20, emit: func(e sseEvent) { got = append(got, fmt.Sprintf("%d|%s|%s", e.n, e.typ, e.data)) }, skip: func(n, b int) { got = append(got, fmt.Sprintf("skip %d", n)) }}
	stream := "\xEF\xBB\xBF: comment\r\nevent: a\rdata: x\r\ndata:y\n\n" + // BOM, CR, CRLF, no space
		"data\n\n" + // a field without colon: empty data
		"event: only\n\n" + // no data: not dispatched
		"id: 7\nretry: 5\ndata:  two spaces\n\n" +
		"data: tail without blank line"
	for i := 0; i < len(stream); i++ { // byte by byte, CRLF and BOM split
		p.feed([]byte{stream[i]})
	}
	want := []string{"1|a|x\ny", "2||", "4|| two spaces"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("events %q, want %q", got, want)
	}
	if p.pending() == 0 {
		t.Errorf("the tail is not reported as pending")
	}
}

// TestSSEParserDrop: an event dropped mid-line (a reader's memory budget
// spent) is skipped and lets its buffer go; the next event is read.
func TestSSEParserDrop(t *testing.T) {
	var got []string
	p := NewSSEParser(1<<20, func(e SSEEvent) { got = append(got, fmt.Sprintf("%d|%s", e.N, e.Data)) }, func(n, b int) { got = append(got, fmt.Sprintf("skip %d", n)) })
	p.Feed([]byte("data: first\n\nevent: message\ndata: " + strings.Repeat("a", 1<<16)))
	p.Drop()
	if c := cap(p.p.line) + cap(p.p.data); c > 64 {
		t.Errorf("the dropped event still holds %d bytes", c)
	}
	p.Feed([]byte("aaa\ndata: more\n\ndata: next\n\n"))
	want := []string{"1|first", "skip 2", "3|next"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestLimits(t *testing.T) {
	// a 100 MB event is skipped without being buffered
	a := newAssembler(apiAnthropicMessages)
	a.Feed([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\"}}\n\nevent: content_block_delta\ndata: \""))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 100; i++ {
		a.Feed(chunk)
		if c := cap(a.sse.line) + cap(a.sse.data); c > 2*defaultLimits().MaxEventBytes {
			t.Fatalf("after %d MiB the parser holds %d bytes", i+1, c)
		}
	}
	a.Feed([]byte("\"\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	o := a.Finish(false)
	if o.Status != StatusPartial || o.ID != "m" || !strings.Contains(strings.Join(o.Problems, ";"), "event 2: over the limit of 16777216 bytes") {
		t.Errorf("100 MB event: %s", o.Payload())
	}

	// many tiny deltas assemble in order, within the text limit
	lim := defaultLimits()
	lim.MaxTextBytes = 1000
	var b bytes.Buffer
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%d\"}}]}\n\n", i%10)
	}
	b.WriteString("data: [DONE]\n\n")
	var o2 Output
	json.Unmarshal([]byte(assemble(apiOpenAIChat, lim, [][]byte{b.Bytes()}, false)), &o2)
	if len(o2.Text) != 1000 || o2.Text[:12] != "012345678901" || o2.Status != StatusPartial {
		t.Errorf("tiny deltas: %d bytes, status %s, %q", len(o2.Text), o2.Status, o2.Problems)
	}

	// tool call indexes beyond MaxParts, and far-apart indexes, stay bounded
	lim = defaultLimits()
	lim.MaxParts = 3
	b.Reset()
	for _, idx := range []int{0, 2147483647, 5, 9, 1} {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"c%d\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n", idx, idx)
	}
	b.WriteString("data: [DONE]\n\n")
	var o3 Output
	json.Unmarshal([]byte(assemble(apiOpenAIChat, lim, [][]byte{b.Bytes()}, false)), &o3)
	if len(o3.ToolCalls) != 3 || o3.ToolCalls[0].ID != "c0" || o3.ToolCalls[1].ID != "c5" || o3.ToolCalls[2].ID != "c2147483647" || o3.Status != statusAmbiguous {
		// ambiguous, which outranks partial: the gaps between the
		// indexes are read otherwise by the SDKs
		t.Errorf("tool call limit: %+v %s", o3.ToolCalls, o3.Status)
	}
}

func TestAmbiguousEventIsNotRead(t *testing.T) {
	s := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\",\"Content\":\"b\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"}}]}\n\ndata: [DONE]\n\n"
	var o Output
	json.Unmarshal([]byte(assemble(apiOpenAIChat, defaultLimits(), [][]byte{[]byte(s)}, false)), &o)
	if o.Status != statusAmbiguous || o.Text != "c" || !strings.Contains(strings.Join(o.Problems, ";"), `event 1`) {
		t.Errorf("ambiguous event: %+v", o)
	}
}

func TestInvalidArgumentsKept(t *testing.T) {
	body := `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1,"}}]},"finish_reason":"tool_calls"}]}`
	o := ParseResponse(apiOpenAIChat, 200, "application/json", []byte(body))
	if o.Status != StatusComplete || len(o.ToolCalls) != 1 || o.ToolCalls[0].Arguments != `{"a":1,` || o.ToolCalls[0].Input != nil || o.ToolCalls[0].ArgumentsError == "" {
		t.Errorf("invalid arguments: %s", o.Payload())
	}
}
