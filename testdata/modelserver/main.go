// Command modelserver is a scripted model API server for tests: it speaks
// OpenAI Chat Completions (POST /v1/chat/completions), OpenAI Responses
// (POST /v1/responses) and Anthropic Messages (POST /v1/messages), streamed
// and not, in the wire forms the providers document, with deterministic
// ids and timestamps.
//
// A JSON script (-script) says which request gets which answer: the first
// rule whose path equals the request's path, whose match string and every
// match_all string occur in the request body, and none of whose unless
// strings does, answers. Since a request carries the conversation so far
// (the tool results included), a rule can key on what an earlier tool
// returned: an agent's turns are scripted by what each request carries,
// not by their order. -var NAME=VALUE (repeatable) replaces ${NAME} in the
// script's strings by VALUE before it is read, so that a script can name a
// path known only at run time (a temporary working directory). An answer describes what the model says
// (text, tool calls, thinking, usage); the server writes it in the API's
// form, as one JSON body or, when the request has "stream": true, as the
// API's server-sent events, text and arguments split into fragments of
// delta characters. Errors: status 429 or 500 answers with the provider's
// error body; error_after N sends the provider's mid-stream error after N
// events; cut_after N aborts the connection after N events.
//
// -listen 127.0.0.1:0 picks a free loopback port; the server prints
// "listening on http://..." on stderr. -record FILE appends one JSON line
// per exchange with the exact bytes received and sent (request_body and
// response_body in base64; the request target and headers), for tests that read what went over the wire.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// Script is the server's script file.
type Script struct {
	Rules []Rule `json:"rules"`
}

// Rule answers requests to Path whose body contains Match and every string
// of MatchAll, and none of Unless.
type Rule struct {
	Path     string   `json:"path"`
	Match    string   `json:"match"`
	MatchAll []string `json:"match_all"`
	Unless   []string `json:"unless"`
	Answer   Answer   `json:"answer"`
}

// matches tells whether the rule answers a request to path with body.
func (ru *Rule) matches(path string, body []byte) bool {
	if ru.Path != path || !bytes.Contains(body, []byte(ru.Match)) {
		return false
	}
	for _, m := range ru.MatchAll {
		if !bytes.Contains(body, []byte(m)) {
			return false
		}
	}
	for _, m := range ru.Unless {
		if bytes.Contains(body, []byte(m)) {
			return false
		}
	}
	return true
}

// vars is the repeatable -var NAME=VALUE flag.
type vars map[string]string

func (v vars) String() string { return "" }

func (v vars) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("-var %q: want NAME=VALUE", s)
	}
	v[name] = value
	return nil
}

// expand replaces ${NAME} by the JSON-escaped VALUE of each variable.
func (v vars) expand(b []byte) []byte {
	for name, value := range v {
		esc, _ := json.Marshal(value)
		b = bytes.ReplaceAll(b, []byte("${"+name+"}"), esc[1:len(esc)-1])
	}
	return b
}

// Answer is what the model says, independent of the wire form.
type Answer struct {
	ID        string     `json:"id"`
	Model     string     `json:"model"`
	Created   int64      `json:"created"`
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls"`
	// Thinking: an Anthropic thinking block, a Responses reasoning summary.
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Stop      string `json:"stop"`
	Usage     struct {
		Input  int `json:"input"`
		Output int `json:"output"`
	} `json:"usage"`
	Delta      int `json:"delta"`
	Status     int `json:"status"`
	ErrorAfter int `json:"error_after"`
	CutAfter   int `json:"cut_after"`
}

// ToolCall is one call the model asks for; Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	ItemID    string `json:"item_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// record is one line of the -record file.
type record struct {
	Method       string `json:"method"`
	Path         string `json:"path"`
	RequestBody  []byte `json:"request_body"`
	Status       int    `json:"status"`
	ContentType  string `json:"content_type"`
	ResponseBody []byte `json:"response_body"`
	Cut          bool   `json:"cut"`
	// Target is the request target as received (path and query), Header
	// the request's headers: what a proxy in front forwarded.
	Target string              `json:"target"`
	Header map[string][]string `json:"header"`
}

type server struct {
	script Script
	mu     sync.Mutex
	rec    io.Writer
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	scriptFile := flag.String("script", "", "script file (JSON)")
	recordFile := flag.String("record", "", "append one JSON line per exchange to this file")
	vs := vars{}
	flag.Var(vs, "var", "NAME=VALUE: replace ${NAME} in the script by VALUE (repeatable)")
	flag.Parse()
	s := &server{}
	b, err := os.ReadFile(*scriptFile)
	if err == nil {
		b = vs.expand(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&s.script)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modelserver: script:", err)
		os.Exit(2)
	}
	if *recordFile != "" {
		f, err := os.OpenFile(*recordFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "modelserver:", err)
			os.Exit(2)
		}
		defer f.Close()
		s.rec = f
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modelserver:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", ln.Addr())
	if err := http.Serve(ln, s); err != nil {
		fmt.Fprintln(os.Stderr, "modelserver:", err)
		os.Exit(1)
	}
}

// tee is the response writer that keeps a copy of the bytes sent.
type tee struct {
	w      http.ResponseWriter
	buf    bytes.Buffer
	status int
}

func (t *tee) Write(p []byte) (int, error) { t.buf.Write(p); return t.w.Write(p) }
func (t *tee) flush()                      { t.w.(http.Flusher).Flush() }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	t := &tee{w: w, status: 200}
	cut := false
	defer func() {
		if s.rec != nil {
			b, _ := json.Marshal(record{r.Method, r.URL.Path, body, t.status, w.Header().Get("Content-Type"), t.buf.Bytes(), cut, r.RequestURI, r.Header})
			s.mu.Lock()
			s.rec.Write(append(b, '\n'))
			s.mu.Unlock()
		}
		if cut {
			panic(http.ErrAbortHandler) // closes the connection mid-stream
		}
	}()
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	var ans *Answer
	for i := range s.script.Rules {
		ru := &s.script.Rules[i]
		if ru.matches(r.URL.Path, body) {
			ans = &ru.Answer
			break
		}
	}
	api := r.URL.Path
	if r.Method != "POST" || ans == nil {
		t.status = 404
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		t.Write([]byte(`{"error":{"message":"no scripted answer for this request","type":"invalid_request_error","param":null,"code":"not_found"}}` + "\n"))
		return
	}
	if ans.Delta <= 0 {
		ans.Delta = 4
	}
	if ans.Status >= 400 {
		t.status = ans.Status
		w.Header().Set("Content-Type", "application/json")
		if ans.Status == 429 {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(ans.Status)
		t.Write(errorBody(api, ans.Status))
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		var v any
		switch api {
		case "/v1/chat/completions":
			v = chatCompletion(ans)
		case "/v1/responses":
			v = response(ans, "completed")
		default:
			v = anthropicMessage(ans, false)
		}
		b, _ := json.Marshal(v)
		t.Write(append(b, '\n'))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	var evs []sse
	switch api {
	case "/v1/chat/completions":
		evs = chatStream(ans, strings.Contains(string(body), `"include_usage":true`))
	case "/v1/responses":
		evs = responseStream(ans)
	default:
		evs = anthropicStream(ans)
	}
	for i, ev := range evs {
		if ans.CutAfter > 0 && i == ans.CutAfter {
			cut = true
			return
		}
		if ans.ErrorAfter > 0 && i == ans.ErrorAfter {
			t.Write(midStreamError(api, i))
			t.flush()
			return
		}
		ev.write(t)
		t.flush()
	}
}

// sse is one event to send.
type sse struct {
	event string // "" for none
	data  any    // JSON value, or a string sent as is
}

func (e sse) write(w io.Writer) {
	var b bytes.Buffer
	if e.event != "" {
		b.WriteString("event: " + e.event + "\n")
	}
	d, ok := e.data.(string)
	if !ok {
		j, _ := json.Marshal(e.data)
		d = string(j)
	}
	b.WriteString("data: " + d + "\n\n")
	w.Write(b.Bytes())
}

// obj is a JSON object that keeps its members in the order given.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// fragments splits s into pieces of n characters.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, c := 0, 0
		for i < len(s) && c < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			c++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func errorBody(api string, status int) []byte {
	var v any
	if api == "/v1/messages" {
		typ, msg := "api_error", "Internal server error"
		if status == 429 {
			typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
		}
		v = obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", msg}}}, {"request_id", "req_000000000000000000000001"}}
	} else {
		typ, msg, code := "server_error", "The server had an error while processing your request. Sorry about that!", any(nil)
		if status == 429 {
			typ, msg, code = "requests", "Rate limit reached for requests. Please try again in 1s.", "rate_limit_exceeded"
		}
		v = obj{{"error", obj{{"message", msg}, {"type", typ}, {"param", nil}, {"code", code}}}}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

func midStreamError(api string, seq int) []byte {
	var b bytes.Buffer
	switch api {
	case "/v1/messages":
		sse{"error", obj{{"type", "error"}, {"error", obj{{"type", "overloaded_error"}, {"message", "Overloaded"}}}}}.write(&b)
	case "/v1/responses":
		sse{"error", obj{{"type", "error"}, {"code", "server_error"}, {"message", "The server had an error while processing your request."}, {"param", nil}, {"sequence_number", seq}}}.write(&b)
	default:
		sse{"", obj{{"error", obj{{"message", "The server had an error while processing your request."}, {"type", "server_error"}, {"param", nil}, {"code", nil}}}}}.write(&b)
	}
	return b.Bytes()
}
