package modelapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Input status values.
const (
	InputOK        = "ok"        // the body was read
	inputAmbiguous = "ambiguous" // readers could disagree on the body: nothing read from it
	InputInvalid   = "invalid"   // not JSON, too deep, or not the API's request shape
)

// Input is what an agent sent to a model: the payload of a model_input
// event (docs/formats/model-events.md).
type Input struct {
	API    API    `json:"api"`
	Status string `json:"status"`
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream"`
	// System holds the system prompt texts in order: Anthropic's system,
	// Responses' instructions, the system and developer messages of Chat
	// Completions (which stay in Messages too, in place).
	System   []string  `json:"system,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Tools are the tool definitions offered to the model.
	Tools []Tool `json:"tools,omitempty"`
	// Params holds every other top-level member as sent (canonical JSON):
	// temperature, max tokens, tool_choice, stream_options, metadata, ...
	Params             map[string]json.RawMessage `json:"params,omitempty"`
	PreviousResponseID string                     `json:"previous_response_id,omitempty"`
	Body               BodyRef                    `json:"body"`
	Problems           []string                   `json:"problems,omitempty"`
}

// Message is one turn (or Responses input item) of the conversation.
type Message struct {
	Role  string `json:"role"`
	Parts []Part `json:"content"`
}

// Part is one piece of a message. Type is text, image, tool_call,
// tool_result, reasoning or other.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// Image: a URL as sent, or for inline data a reference to it.
	URL        string `json:"url,omitempty"`
	MediaType  string `json:"media_type,omitempty"`
	DataSHA256 string `json:"data_sha256,omitempty"`
	DataChars  int    `json:"data_chars,omitempty"`
	// tool_call
	Call *ToolCall `json:"call,omitempty"`
	// tool_result: the call it answers, its content, whether it is an error
	CallID  string `json:"call_id,omitempty"`
	Content []Part `json:"result,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// reasoning, other: the part as sent (canonical JSON)
	Value json.RawMessage `json:"value,omitempty"`
}

// Tool is a tool definition offered to the model. Function tools have a
// name, description and parameter schema; hosted tools (web search, ...)
// keep their definition as sent in Value.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Extra holds the definition's other members (strict, cache_control).
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	Value json.RawMessage            `json:"value,omitempty"`
}

// ToolCall is a call the model asked for (or, in a request, one it asked
// for earlier). Arguments is the text exactly as sent; Input is its parsed
// JSON (canonical) when it parses unambiguously, else ArgumentsError says
// why not.
type ToolCall struct {
	ID             string          `json:"id"`
	ItemID         string          `json:"item_id,omitempty"`
	Name           string          `json:"name"`
	Arguments      string          `json:"arguments"`
	Input          json.RawMessage `json:"input,omitempty"`
	ArgumentsError string          `json:"arguments_error,omitempty"`
}

// Payload returns the canonical JSON of the model_input payload.
func (in *Input) Payload() json.RawMessage { return payload(in) }

func payload(v any) json.RawMessage {
	b, err := canon.Marshal(v)
	if err != nil {
		// unreachable: every string is valid UTF-8, every raw value canonical
		b, _ = canon.Marshal(map[string]any{"status": "invalid", "problems": []string{err.Error()}})
	}
	return b
}

// parseRequest reads a request body of api. Errors are *AmbiguousError
// (readers could disagree on the body) or *jsontree.Error naming the line,
// column and JSON path of the field at fault.
func parseRequest(api API, body []byte) (*Input, error) {
	const name = "request body"
	if !api.valid() {
		return nil, fmt.Errorf("modelapi: unknown API %q", api)
	}
	v, err := readJSON(body, name)
	if err != nil {
		return nil, err
	}
	s := &shape{name: name, body: body}
	in := &Input{API: api, Status: InputOK, Body: refOf(body)}
	if !s.want(v, "", jsontree.Object, true) {
		return nil, s.err
	}
	if m := v.Get("model"); s.want(m, "$.model", jsontree.String, api != apiOpenAIResponses) {
		in.Model = m.Str
	}
	if st := v.Get("stream"); st != nil && st.Kind != jsontree.Null && s.want(st, "$.stream", jsontree.Bool, false) {
		in.Stream = st.Bool
	}
	mapped := map[string]bool{"model": true, "stream": true, "tools": true}
	switch api {
	case apiOpenAIChat:
		mapped["messages"] = true
		chatRequest(s, v, in)
	case apiOpenAIResponses:
		mapped["input"], mapped["instructions"] = true, true
		responsesRequest(s, v, in)
	case apiAnthropicMessages:
		mapped["messages"], mapped["system"] = true, true
		anthropicRequest(s, v, in)
	}
	in.Tools = tools(s, api, v.Get("tools"))
	for _, m := range v.Obj {
		if mapped[m.Key] {
			continue
		}
		if in.Params == nil {
			in.Params = map[string]json.RawMessage{}
		}
		in.Params[m.Key] = raw(m.Val)
		if m.Key == "previous_response_id" && api == apiOpenAIResponses {
			in.PreviousResponseID = str(m.Val)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return in, nil
}

func chatRequest(s *shape, v *jsontree.Value, in *Input) {
	msgs := v.Get("messages")
	if !s.want(msgs, "$.messages", jsontree.Array, true) {
		return
	}
	for i, m := range msgs.Arr {
		p := jsonpath.Index("$.messages", i)
		if !s.want(m, p, jsontree.Object, true) {
			return
		}
		role := m.Get("role")
		if !s.want(role, p+".role", jsontree.String, true) {
			return
		}
		msg := Message{Role: role.Str}
		c := m.Get("content")
		switch role.Str {
		case "tool":
			id := m.Get("tool_call_id")
			s.want(id, p+".tool_call_id", jsontree.String, true)
			msg.Parts = []Part{{Type: "tool_result", CallID: str(id), Content: contentParts(s, c, p+".content")}}
		default:
			msg.Parts = contentParts(s, c, p+".content")
			if role.Str == "system" || role.Str == "developer" {
				in.System = append(in.System, joinText(msg.Parts))
			}
		}
		if tc := m.Get("tool_calls"); !isNull(tc) && s.want(tc, p+".tool_calls", jsontree.Array, false) {
			for j, c := range tc.Arr {
				cp := jsonpath.Index(p+".tool_calls", j)
				if !s.want(c, cp, jsontree.Object, true) {
					return
				}
				fn := c.Get("function")
				if !s.want(fn, cp+".function", jsontree.Object, true) {
					return
				}
				call := newToolCall(str(c.Get("id")), str(fn.Get("name")), fn.Get("arguments"), s, cp+".function.arguments")
				msg.Parts = append(msg.Parts, Part{Type: "tool_call", Call: call})
			}
		}
		in.Messages = append(in.Messages, msg)
	}
}

func responsesRequest(s *shape, v *jsontree.Value, in *Input) {
	if ins := v.Get("instructions"); !isNull(ins) && s.want(ins, "$.instructions", jsontree.String, false) {
		in.System = append(in.System, ins.Str)
	}
	input := v.Get("input")
	if input == nil {
		return
	}
	if input.Kind == jsontree.String {
		in.Messages = []Message{{Role: "user", Parts: []Part{{Type: "text", Text: input.Str}}}}
		return
	}
	if !s.want(input, "$.input", jsontree.Array, true) {
		return
	}
	for i, it := range input.Arr {
		p := jsonpath.Index("$.input", i)
		if !s.want(it, p, jsontree.Object, true) {
			return
		}
		typ := str(it.Get("type"))
		role := str(it.Get("role"))
		switch {
		case typ == "function_call":
			call := newToolCall(str(it.Get("call_id")), str(it.Get("name")), it.Get("arguments"), s, p+".arguments")
			call.ItemID = str(it.Get("id"))
			in.Messages = append(in.Messages, Message{Role: "assistant", Parts: []Part{{Type: "tool_call", Call: call}}})
		case typ == "function_call_output":
			id := it.Get("call_id")
			s.want(id, p+".call_id", jsontree.String, true)
			in.Messages = append(in.Messages, Message{Role: "tool", Parts: []Part{{Type: "tool_result", CallID: str(id), Content: contentParts(s, it.Get("output"), p+".output")}}})
		case typ == "reasoning":
			in.Messages = append(in.Messages, Message{Role: "assistant", Parts: []Part{{Type: "reasoning", Value: raw(it)}}})
		case typ == "message" || (typ == "" && role != ""):
			if !s.want(it.Get("role"), p+".role", jsontree.String, true) {
				return
			}
			msg := Message{Role: role, Parts: contentParts(s, it.Get("content"), p+".content")}
			if role == "system" || role == "developer" {
				in.System = append(in.System, joinText(msg.Parts))
			}
			in.Messages = append(in.Messages, msg)
		default:
			in.Messages = append(in.Messages, Message{Role: "item", Parts: []Part{{Type: "other", Value: raw(it)}}})
		}
	}
}

func anthropicRequest(s *shape, v *jsontree.Value, in *Input) {
	if sys := v.Get("system"); !isNull(sys) {
		switch sys.Kind {
		case jsontree.String:
			in.System = append(in.System, sys.Str)
		case jsontree.Array:
			in.System = append(in.System, joinText(contentParts(s, sys, "$.system")))
		default:
			s.fail(sys, "$.system", "want a string or an array of blocks, got "+sys.Kind.String())
		}
	}
	msgs := v.Get("messages")
	if !s.want(msgs, "$.messages", jsontree.Array, true) {
		return
	}
	for i, m := range msgs.Arr {
		p := jsonpath.Index("$.messages", i)
		if !s.want(m, p, jsontree.Object, true) {
			return
		}
		role := m.Get("role")
		if !s.want(role, p+".role", jsontree.String, true) {
			return
		}
		in.Messages = append(in.Messages, Message{Role: role.Str, Parts: contentParts(s, m.Get("content"), p+".content")})
	}
}

// contentParts reads message content: a string (one text part), null or
// absent (no parts), or an array of parts of any of the three APIs.
func contentParts(s *shape, c *jsontree.Value, path string) []Part {
	if isNull(c) {
		return nil
	}
	switch c.Kind {
	case jsontree.String:
		return []Part{{Type: "text", Text: c.Str}}
	case jsontree.Array:
	default:
		s.fail(c, path, "want a string or an array of content parts, got "+c.Kind.String())
		return nil
	}
	var parts []Part
	for i, el := range c.Arr {
		p := jsonpath.Index(path, i)
		if el.Kind == jsontree.String { // Responses output arrays may hold plain strings
			parts = append(parts, Part{Type: "text", Text: el.Str})
			continue
		}
		if !s.want(el, p, jsontree.Object, true) {
			return parts
		}
		parts = append(parts, contentPart(s, el, p))
	}
	return parts
}

func contentPart(s *shape, el *jsontree.Value, path string) Part {
	typ := str(el.Get("type"))
	switch typ {
	case "text", "input_text", "output_text":
		t := el.Get("text")
		s.want(t, path+".text", jsontree.String, true)
		return Part{Type: "text", Text: str(t)}
	case "image_url": // Chat Completions
		u := member(el.Get("image_url"), "url")
		s.want(u, path+".image_url.url", jsontree.String, true)
		return imageURL(str(u))
	case "input_image": // Responses
		if u := el.Get("image_url"); u != nil {
			return imageURL(str(u))
		}
		return Part{Type: "image", Value: raw(el)}
	case "image", "document": // Anthropic
		src := el.Get("source")
		switch str(member(src, "type")) {
		case "base64":
			d := str(member(src, "data"))
			return Part{Type: typeOfBlock(typ), MediaType: str(member(src, "media_type")), DataSHA256: sha(d), DataChars: len(d)}
		case "url":
			return Part{Type: typeOfBlock(typ), URL: str(member(src, "url"))}
		}
		return Part{Type: typeOfBlock(typ), Value: raw(el)}
	case "tool_use": // Anthropic, assistant turn
		in := el.Get("input")
		call := &ToolCall{ID: str(el.Get("id")), Name: str(el.Get("name"))}
		if in != nil {
			call.Input = raw(in)
			call.Arguments = s.text(in)
		}
		return Part{Type: "tool_call", Call: call}
	case "tool_result": // Anthropic, user turn
		id := el.Get("tool_use_id")
		s.want(id, path+".tool_use_id", jsontree.String, true)
		ie := el.Get("is_error")
		return Part{Type: "tool_result", CallID: str(id), Content: contentParts(s, el.Get("content"), path+".content"), IsError: ie != nil && ie.Kind == jsontree.Bool && ie.Bool}
	case "thinking", "redacted_thinking", "reasoning":
		return Part{Type: "reasoning", Value: raw(el)}
	}
	return Part{Type: "other", Value: raw(el)}
}

func typeOfBlock(t string) string {
	if t == "document" {
		return "document"
	}
	return "image"
}

// imageURL keeps an image URL, or for a data: URL a reference to its data.
func imageURL(u string) Part {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		mt, data, _ := strings.Cut(rest, ",")
		mt, _, _ = strings.Cut(mt, ";")
		return Part{Type: "image", MediaType: mt, DataSHA256: sha(data), DataChars: len(data)}
	}
	return Part{Type: "image", URL: u}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func joinText(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// newToolCall builds a call whose arguments are a JSON string (OpenAI).
func newToolCall(id, name string, args *jsontree.Value, s *shape, path string) *ToolCall {
	c := &ToolCall{ID: id, Name: name}
	if !isNull(args) && s.want(args, path, jsontree.String, false) {
		c.setArguments(args.Str)
	}
	return c
}

// setArguments keeps the arguments text and parses it when it parses.
func (c *ToolCall) setArguments(text string) {
	c.Arguments, c.Input, c.ArgumentsError = text, nil, ""
	if text == "" {
		c.ArgumentsError = "empty"
		return
	}
	v, err := readJSON([]byte(text), "arguments")
	if err != nil {
		var ae *ambiguousError
		if errors.As(err, &ae) {
			c.ArgumentsError = "ambiguous: " + strings.Join(ae.Reasons, "; ")
		} else {
			c.ArgumentsError = strings.TrimPrefix(err.Error(), "arguments:")
			c.ArgumentsError = strings.TrimSpace(c.ArgumentsError)
		}
		return
	}
	c.Input = raw(v)
}

// tools reads the tool definitions of a request.
func tools(s *shape, api API, v *jsontree.Value) []Tool {
	if isNull(v) || !s.want(v, "$.tools", jsontree.Array, false) {
		return nil
	}
	var out []Tool
	for i, t := range v.Arr {
		p := jsonpath.Index("$.tools", i)
		if !s.want(t, p, jsontree.Object, true) {
			return out
		}
		typ := str(t.Get("type"))
		def, defPath, skip := t, p, map[string]bool{"type": true}
		schema := "parameters"
		switch {
		case api == apiOpenAIChat && typ == "function":
			def, defPath = t.Get("function"), p+".function"
			if !s.want(def, defPath, jsontree.Object, true) {
				return out
			}
			skip = map[string]bool{}
			if len(t.Obj) > 2 {
				out = append(out, Tool{Type: typ, Value: raw(t)})
				continue
			}
		case api == apiOpenAIResponses && typ == "function":
		case api == apiAnthropicMessages && (typ == "" || typ == "custom"):
			schema = "input_schema"
			typ = "function"
		default:
			out = append(out, Tool{Type: typ, Value: raw(t)})
			continue
		}
		tool := Tool{Type: "function"}
		for _, m := range def.Obj {
			switch {
			case skip[m.Key]:
			case m.Key == "name":
				tool.Name = str(m.Val)
			case m.Key == "description":
				tool.Description = str(m.Val)
			case m.Key == schema:
				tool.Parameters = raw(m.Val)
			default:
				if tool.Extra == nil {
					tool.Extra = map[string]json.RawMessage{}
				}
				tool.Extra[m.Key] = raw(m.Val)
			}
		}
		if n := def.Get("name"); s.want(n, defPath+".name", jsontree.String, true) {
			tool.Name = n.Str
		}
		out = append(out, tool)
	}
	return out
}
