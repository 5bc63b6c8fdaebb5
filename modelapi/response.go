package modelapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Output status values.
const (
	// StatusComplete: the whole answer was received and read.
	StatusComplete = "complete"
	// StatusPartial: the stream was cut by either side, ended without its
	// terminal event, or a part could not be read or hit a limit;
	// everything received is kept and Problems says what is missing.
	StatusPartial = "partial"
	// StatusError: the provider answered an error (HTTP 4xx or 5xx, an
	// error event mid-stream, a failed response); Error holds its body.
	StatusError = "error"
	// statusAmbiguous: a body or event readers could disagree on; nothing
	// read from it is chosen, Problems gives the reasons.
	statusAmbiguous = "ambiguous"
)

// Output is what the model answered: the payload of a model_output event
// (docs/formats/model-events.md). A streamed answer assembles to the same
// Output as the same answer not streamed, but for Streamed, Events and
// Body.
type Output struct {
	API        API    `json:"api"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Streamed   bool   `json:"streamed"`
	// Events counts the server-sent events read (streamed answers).
	Events int    `json:"events,omitempty"`
	ID     string `json:"id,omitempty"`
	Model  string `json:"model,omitempty"`
	// Text is the assistant's text, every text part concatenated in order.
	Text      string     `json:"text,omitempty"`
	Refusal   string     `json:"refusal,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning keeps reasoning items and thinking blocks as sent (or as
	// assembled from their deltas).
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
	// Other keeps the output items and content blocks that are not
	// assembled (hosted tool calls, server tool results), as sent.
	Other      []json.RawMessage `json:"other,omitempty"`
	StopReason string            `json:"stop_reason,omitempty"`
	Usage      json.RawMessage   `json:"usage,omitempty"`
	// Error is the provider's error body (JSON as sent, or the text).
	Error    json.RawMessage `json:"error,omitempty"`
	Body     BodyRef         `json:"body"`
	Problems []string        `json:"problems,omitempty"`
}

// Payload returns the canonical JSON of the model_output payload.
func (o *Output) Payload() json.RawMessage { return payload(o) }

func (o *Output) problem(format string, args ...any) {
	if len(o.Problems) < maxReasons {
		o.Problems = append(o.Problems, fmt.Sprintf(format, args...))
	} else if len(o.Problems) == maxReasons {
		o.Problems = append(o.Problems, "more problems not listed")
	}
}

// degrade lowers the status to s unless it is already worse (error >
// ambiguous > partial > complete).
func (o *Output) degrade(s string) {
	rank := map[string]int{StatusComplete: 0, StatusPartial: 1, statusAmbiguous: 2, StatusError: 3}
	if rank[s] > rank[o.Status] {
		o.Status = s
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// ParseResponse reads a whole response of api: HTTP status, Content-Type
// and body as received. A text/event-stream body is assembled as a stream
// that ended normally (NewAssembler, Finish(false)). It never fails: what
// cannot be read is the Output's status and problems.
func ParseResponse(api API, status int, contentType string, body []byte) *Output {
	return parseResponse(api, status, contentType, body, defaultLimits())
}

func parseResponse(api API, status int, contentType string, body []byte, lim limits) *Output {
	if isEventStream(contentType) {
		a := newAssemblerLimits(api, lim)
		a.SetHTTPStatus(status)
		a.Feed(body)
		return a.Finish(false)
	}
	o := &Output{API: api, Status: StatusComplete, HTTPStatus: status, Body: refOf(body)}
	if !api.valid() {
		o.degrade(StatusPartial)
		o.problem("unknown API %q", api)
		return o
	}
	if len(body) > lim.MaxBodyBytes {
		o.degrade(StatusPartial)
		o.problem("body of %d bytes is over the limit of %d bytes: not read", len(body), lim.MaxBodyBytes)
		return o
	}
	if status >= 400 {
		o.Status = StatusError
		o.Error = errorBody(body)
		return o
	}
	v, err := readJSON(body, "response body")
	if err != nil {
		o.unreadable(err)
		return o
	}
	s := &shape{name: "response body", body: body}
	o.fromObject(s, v, "")
	if s.err != nil {
		o.degrade(StatusPartial)
		o.problem("%s", s.err.Error())
	}
	return o
}

// unreadable records a body or event that could not be read.
func (o *Output) unreadable(err error) {
	var ae *ambiguousError
	if errors.As(err, &ae) {
		o.degrade(statusAmbiguous)
		for _, r := range ae.Reasons {
			o.problem("%s: %s", ae.Name, r)
		}
		return
	}
	o.degrade(StatusPartial)
	o.problem("%s", err.Error())
}

// errorBody keeps an error body: its JSON when it reads, else its text,
// else a reference to its bytes.
func errorBody(body []byte) json.RawMessage {
	if v, err := readJSON(body, "error body"); err == nil {
		return raw(v)
	}
	if utf8.Valid(body) {
		b, _ := json.Marshal(map[string]string{"text": string(body)})
		return b
	}
	b, _ := json.Marshal(refOf(body))
	return b
}

// fromObject fills o from a whole answer object of o.API: a chat
// completion, a response, a message. base is the JSON path of v.
func (o *Output) fromObject(s *shape, v *jsontree.Value, base string) {
	if !s.want(v, base, jsontree.Object, true) {
		return
	}
	if e := v.Get("error"); !isNull(e) && o.API != apiOpenAIResponses {
		o.Status = StatusError
		o.Error = raw(e)
	}
	o.ID = str(v.Get("id"))
	o.Model = str(v.Get("model"))
	if u := v.Get("usage"); !isNull(u) {
		o.Usage = raw(u)
	}
	switch o.API {
	case apiOpenAIChat:
		o.chatCompletion(s, v, base)
	case apiOpenAIResponses:
		o.response(s, v, base)
	case apiAnthropicMessages:
		o.anthropicMessage(s, v, base)
	}
}

func (o *Output) chatCompletion(s *shape, v *jsontree.Value, base string) {
	choices := v.Get("choices")
	if !s.want(choices, base+".choices", jsontree.Array, o.Status != StatusError) {
		return
	}
	if len(choices.Arr) == 0 {
		return
	}
	if len(choices.Arr) > 1 {
		o.problem("%d choices: only choice 0 is assembled", len(choices.Arr))
	}
	c := choices.Arr[0]
	p := base + ".choices[0]"
	if !s.want(c, p, jsontree.Object, true) {
		return
	}
	o.StopReason = str(c.Get("finish_reason"))
	msg := c.Get("message")
	if !s.want(msg, p+".message", jsontree.Object, true) {
		return
	}
	if t := msg.Get("content"); !isNull(t) && s.want(t, p+".message.content", jsontree.String, false) {
		o.Text = t.Str
	}
	if r := msg.Get("refusal"); !isNull(r) && s.want(r, p+".message.refusal", jsontree.String, false) {
		o.Refusal = r.Str
	}
	if tc := msg.Get("tool_calls"); !isNull(tc) && s.want(tc, p+".message.tool_calls", jsontree.Array, false) {
		for j, c := range tc.Arr {
			cp := jsonpath.Index(p+".message.tool_calls", j)
			if !s.want(c, cp, jsontree.Object, true) {
				return
			}
			fn := c.Get("function")
			if fn == nil { // a custom tool call: kept as sent
				o.Other = append(o.Other, raw(c))
				continue
			}
			if !s.want(fn, cp+".function", jsontree.Object, true) {
				return
			}
			o.ToolCalls = append(o.ToolCalls, *newToolCall(str(c.Get("id")), str(fn.Get("name")), fn.Get("arguments"), s, cp+".function.arguments"))
		}
	}
}

func (o *Output) response(s *shape, v *jsontree.Value, base string) {
	st := str(v.Get("status"))
	o.StopReason = st
	if r := str(member(v.Get("incomplete_details"), "reason")); r != "" {
		o.StopReason = st + ": " + r
	}
	if e := v.Get("error"); !isNull(e) {
		o.Status = StatusError
		o.Error = raw(e)
	}
	if st == "failed" {
		o.Status = StatusError
	}
	out := v.Get("output")
	if !s.want(out, base+".output", jsontree.Array, o.Status != StatusError) {
		return
	}
	for i, it := range out.Arr {
		if !s.want(it, jsonpath.Index(base+".output", i), jsontree.Object, true) {
			return
		}
		o.responseItem(s, it, jsonpath.Index(base+".output", i))
	}
}

func (o *Output) responseItem(s *shape, it *jsontree.Value, p string) {
	switch str(it.Get("type")) {
	case "message":
		c := it.Get("content")
		if !s.want(c, p+".content", jsontree.Array, true) {
			return
		}
		for j, part := range c.Arr {
			switch str(member(part, "type")) {
			case "output_text":
				t := part.Get("text")
				if s.want(t, jsonpath.Index(p+".content", j)+".text", jsontree.String, true) {
					o.Text += t.Str
				}
			case "refusal":
				o.Refusal += str(part.Get("refusal"))
			default:
				o.Other = append(o.Other, raw(part))
			}
		}
	case "function_call":
		c := newToolCall(str(it.Get("call_id")), str(it.Get("name")), it.Get("arguments"), s, p+".arguments")
		c.ItemID = str(it.Get("id"))
		o.ToolCalls = append(o.ToolCalls, *c)
	case "reasoning":
		o.Reasoning = append(o.Reasoning, raw(it))
	default:
		o.Other = append(o.Other, raw(it))
	}
}

func (o *Output) anthropicMessage(s *shape, v *jsontree.Value, base string) {
	if o.Status == StatusError {
		return
	}
	o.StopReason = str(v.Get("stop_reason"))
	c := v.Get("content")
	if !s.want(c, base+".content", jsontree.Array, true) {
		return
	}
	for i, b := range c.Arr {
		p := jsonpath.Index(base+".content", i)
		if !s.want(b, p, jsontree.Object, true) {
			return
		}
		switch str(b.Get("type")) {
		case "text":
			o.Text += str(b.Get("text"))
		case "tool_use":
			in := b.Get("input")
			call := ToolCall{ID: str(b.Get("id")), Name: str(b.Get("name"))}
			if s.want(in, p+".input", jsontree.Object, true) {
				call.Arguments = s.text(in)
				call.Input = raw(in)
			}
			o.ToolCalls = append(o.ToolCalls, call)
		case "thinking", "redacted_thinking":
			o.Reasoning = append(o.Reasoning, raw(b))
		default:
			o.Other = append(o.Other, raw(b))
		}
	}
}

// itoa is strconv.Itoa, named for the event counters.
func itoa(n int) string { return strconv.Itoa(n) }
