package modelapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// assembler reads a streamed answer (text/event-stream) as its bytes pass,
// in any chunking, and assembles the same Output a non-streamed answer
// gives. Memory is bounded by its Limits whatever the stream holds.
type assembler struct {
	api  API
	lim  limits
	sse  sseParser
	hash hash.Hash
	size int64
	out  *Output

	terminal  bool // the stream's terminal event was read
	after     int  // events after the terminal event
	textBytes int
	textOver  bool

	// OpenAI Chat Completions
	text, refusal strings.Builder
	calls         map[int]*callAcc
	otherChoices  bool

	// Anthropic Messages
	blocks  map[int]*blockAcc
	started int // content_block_start events read
	usage   map[string]json.RawMessage
	named   bool // an event without a name was skipped

	// OpenAI Responses
	items map[int]*itemAcc
	final *Output
	resp  respState // the SDK accumulator's consistency state
}

type callAcc struct {
	id, name   string
	args       strings.Builder
	ids, names int // the deltas that carried an id, a name
}

type blockAcc struct {
	typ, id, name  string
	start          json.RawMessage // content_block_start's block, canonical
	startInput     string          // its input's text as sent
	text, partial  strings.Builder // text or thinking; partial_json
	signature      strings.Builder
	stopped, delta bool
}

type itemAcc struct {
	typ, id, callID, name string
	added                 json.RawMessage
	text, refusal, args   strings.Builder
	argsDone              *string
	done                  *Output // the item's contribution as output_item.done gave it
}

// newAssembler returns an assembler for a streamed answer of api with
// DefaultLimits.
func newAssembler(api API) *assembler { return newAssemblerLimits(api, defaultLimits()) }

// newAssemblerLimits returns an assembler with the given limits.
func newAssemblerLimits(api API, lim limits) *assembler {
	a := &assembler{
		api:    api,
		lim:    lim,
		hash:   sha256.New(),
		out:    &Output{API: api, Status: StatusComplete, Streamed: true},
		calls:  map[int]*callAcc{},
		blocks: map[int]*blockAcc{},
		items:  map[int]*itemAcc{},
		usage:  map[string]json.RawMessage{},
	}
	a.sse = sseParser{limit: lim.MaxEventBytes, emit: a.event, skip: a.skipped}
	if !api.valid() {
		a.out.degrade(StatusPartial)
		a.out.problem("unknown API %q: events not read", api)
	}
	return a
}

// SetHTTPStatus records the HTTP status of the response (an event stream
// under a 4xx or 5xx status is an error).
func (a *assembler) SetHTTPStatus(status int) {
	a.out.HTTPStatus = status
	if status >= 400 {
		a.out.Status = StatusError
		a.out.problem("event stream under HTTP status %d", status)
	}
}

// Feed reads the next bytes of the stream; chunk boundaries may fall
// anywhere, even inside a UTF-8 character.
func (a *assembler) Feed(chunk []byte) {
	a.hash.Write(chunk)
	a.size += int64(len(chunk))
	a.sse.feed(chunk)
}

func (a *assembler) skipped(n, size int) {
	a.out.Events++
	a.out.degrade(StatusPartial)
	a.out.problem("event %d: over the limit of %d bytes (%d bytes or more): skipped", n, a.lim.MaxEventBytes, size)
}

// addText appends s to b within the text limit.
func (a *assembler) addText(b *strings.Builder, s string) {
	if a.textBytes+len(s) > a.lim.MaxTextBytes {
		if !a.textOver {
			a.textOver = true
			a.out.degrade(StatusPartial)
			a.out.problem("assembled text over the limit of %d bytes: the rest is not kept", a.lim.MaxTextBytes)
		}
		return
	}
	a.textBytes += len(s)
	b.WriteString(s)
}

func (a *assembler) event(ev sseEvent) {
	a.out.Events++
	if !a.api.valid() {
		return
	}
	if a.terminal {
		a.after++
		return
	}
	if a.api == apiOpenAIChat && string(ev.data) == "[DONE]" {
		a.terminal = true
		return
	}
	if a.api == apiAnthropicMessages {
		switch ev.typ {
		case "ping":
			// skipped by its name; a ping whose data says another type
			// is read by other clients
			if v, err := readJSON(ev.data, "event "+itoa(ev.n)); err != nil || v.Kind != jsontree.Object || str(v.Get("type")) != "ping" {
				a.out.degrade(statusAmbiguous)
				a.out.problem("event %d is named \"ping\" but its data is not a ping: the Anthropic SDK skips it by its name", ev.n)
			}
			return
		case "":
			if !a.named {
				a.named = true
				a.out.problem("event %d has no event name: skipped, as the Anthropic SDK skips it", ev.n)
			}
			return
		}
	}
	name := "event " + itoa(ev.n)
	v, err := readJSON(ev.data, name)
	if err == nil && a.api == apiAnthropicMessages && v.Kind == jsontree.Object && str(v.Get("type")) != ev.typ {
		// the Anthropic SDK picks the events it reads by their event:
		// name, then reads them by their type
		a.out.degrade(statusAmbiguous)
		a.out.problem("%s is named %q but its type is %q: the Anthropic SDK reads it by one, then the other", name, ev.typ, str(v.Get("type")))
		return
	}
	if err != nil {
		a.out.unreadable(err)
		return
	}
	s := &shape{name: name, body: ev.data}
	if !s.want(v, "", jsontree.Object, true) {
		a.out.degrade(StatusPartial)
		a.out.problem("%s", s.err.Error())
		return
	}
	if ev.typ == "error" || (a.api == apiOpenAIResponses && str(v.Get("type")) == "error") {
		a.fail(v)
		return
	}
	switch a.api {
	case apiOpenAIChat:
		if e := v.Get("error"); !isNull(e) {
			a.out.Error = raw(e)
			a.out.Status = StatusError
			a.terminal = true
			return
		}
		a.chatChunk(s, v)
	case apiOpenAIResponses:
		a.responsesEvent(s, v)
	case apiAnthropicMessages:
		a.anthropicEvent(s, v)
	}
	if s.err != nil {
		a.out.degrade(StatusPartial)
		a.out.problem("%s", s.err.Error())
	}
}

// fail records an error event: the stream ends in an error.
func (a *assembler) fail(v *jsontree.Value) {
	a.out.Status = StatusError
	a.out.Error = raw(v)
	a.terminal = true
}

func intMember(s *shape, v *jsontree.Value, key, path string) (int, bool) {
	n := v.Get(key)
	if !s.want(n, path, jsontree.Number, true) {
		return 0, false
	}
	i, err := n.Num.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		s.fail(n, path, "want a non-negative integer, got "+string(n.Num))
		return 0, false
	}
	return int(i), true
}

func (a *assembler) chatChunk(s *shape, v *jsontree.Value) {
	if id := str(v.Get("id")); id != "" {
		a.out.ID = id
	}
	if m := str(v.Get("model")); m != "" {
		a.out.Model = m
	}
	if u := v.Get("usage"); !isNull(u) {
		a.out.Usage = raw(u)
	}
	choices := v.Get("choices")
	if isNull(choices) || !s.want(choices, "$.choices", jsontree.Array, false) {
		return
	}
	for i, c := range choices.Arr {
		p := "$.choices[" + itoa(i) + "]"
		if !s.want(c, p, jsontree.Object, true) {
			return
		}
		idx, ok := intMember(s, c, "index", p+".index")
		if !ok {
			return
		}
		if idx != 0 {
			if !a.otherChoices {
				a.otherChoices = true
				a.out.problem("several choices: only choice 0 is assembled")
			}
			continue
		}
		if fr := str(c.Get("finish_reason")); fr != "" {
			a.out.StopReason = fr
		}
		d := c.Get("delta")
		if isNull(d) || !s.want(d, p+".delta", jsontree.Object, false) {
			continue
		}
		if t := d.Get("content"); !isNull(t) && s.want(t, p+".delta.content", jsontree.String, false) {
			a.addText(&a.text, t.Str)
		}
		if t := d.Get("refusal"); !isNull(t) && s.want(t, p+".delta.refusal", jsontree.String, false) {
			a.addText(&a.refusal, t.Str)
		}
		tcs := d.Get("tool_calls")
		if isNull(tcs) || !s.want(tcs, p+".delta.tool_calls", jsontree.Array, false) {
			continue
		}
		for j, tc := range tcs.Arr {
			tp := p + ".delta.tool_calls[" + itoa(j) + "]"
			if !s.want(tc, tp, jsontree.Object, true) {
				return
			}
			k, ok := intMember(s, tc, "index", tp+".index")
			if !ok {
				return
			}
			acc := a.calls[k]
			if acc == nil {
				if len(a.calls) >= a.lim.MaxParts {
					a.out.degrade(StatusPartial)
					a.out.problem("more than %d tool calls: call index %d not kept", a.lim.MaxParts, k)
					continue
				}
				acc = &callAcc{}
				a.calls[k] = acc
			}
			if id := str(tc.Get("id")); id != "" {
				acc.id = id
				acc.ids++
			}
			fn := tc.Get("function")
			if n := str(member(fn, "name")); n != "" {
				acc.name = n
				acc.names++
			}
			if ar := member(fn, "arguments"); !isNull(ar) && s.want(ar, tp+".function.arguments", jsontree.String, false) {
				a.addText(&acc.args, ar.Str)
			}
		}
	}
}

func (a *assembler) anthropicEvent(s *shape, v *jsontree.Value) {
	switch str(v.Get("type")) {
	case "message_start":
		m := v.Get("message")
		if !s.want(m, "$.message", jsontree.Object, true) {
			return
		}
		a.out.ID, a.out.Model = str(m.Get("id")), str(m.Get("model"))
		a.mergeUsage(m.Get("usage"))
	case "content_block_start":
		i, ok := intMember(s, v, "index", "$.index")
		b := v.Get("content_block")
		if !ok || !s.want(b, "$.content_block", jsontree.Object, true) {
			return
		}
		if i != a.started {
			// the Anthropic SDK appends each started block and applies a
			// delta to the block at its index
			a.out.degrade(statusAmbiguous)
			a.out.problem("content_block_start %d is the stream's block %d: the Anthropic SDK appends it as block %d and applies index %d's deltas elsewhere", i, a.started, a.started, i)
		}
		a.started++
		if a.blocks[i] == nil && len(a.blocks) >= a.lim.MaxParts {
			a.out.degrade(StatusPartial)
			a.out.problem("more than %d content blocks: block %d not kept", a.lim.MaxParts, i)
			return
		}
		acc := &blockAcc{typ: str(b.Get("type")), id: str(b.Get("id")), name: str(b.Get("name")), start: raw(b)}
		if in := b.Get("input"); in != nil {
			acc.startInput = s.text(in)
		}
		if t := str(b.Get("text")); t != "" {
			a.addText(&acc.text, t)
		}
		if t := str(b.Get("thinking")); t != "" {
			a.addText(&acc.text, t)
		}
		if t := str(b.Get("signature")); t != "" {
			a.addText(&acc.signature, t)
		}
		a.blocks[i] = acc
	case "content_block_delta":
		i, ok := intMember(s, v, "index", "$.index")
		d := v.Get("delta")
		if !ok || !s.want(d, "$.delta", jsontree.Object, true) {
			return
		}
		acc := a.blocks[i]
		if acc == nil {
			a.out.degrade(StatusPartial)
			a.out.problem("content_block_delta for block %d, which was never started: not kept", i)
			return
		}
		acc.delta = true
		switch str(d.Get("type")) {
		case "text_delta":
			a.addText(&acc.text, str(d.Get("text")))
		case "thinking_delta":
			a.addText(&acc.text, str(d.Get("thinking")))
		case "signature_delta":
			a.addText(&acc.signature, str(d.Get("signature")))
		case "input_json_delta":
			a.addText(&acc.partial, str(d.Get("partial_json")))
		}
	case "content_block_stop":
		if i, ok := intMember(s, v, "index", "$.index"); ok && a.blocks[i] != nil {
			a.blocks[i].stopped = true
		}
	case "message_delta":
		if d := v.Get("delta"); d != nil {
			if sr := str(d.Get("stop_reason")); sr != "" {
				a.out.StopReason = sr
			}
		}
		a.mergeUsage(v.Get("usage"))
	case "message_stop":
		a.terminal = true
	}
}

// mergeUsage overwrites the usage members that u sets (not null), as the
// Anthropic SDK merges message_delta's usage into message_start's.
func (a *assembler) mergeUsage(u *jsontree.Value) {
	if u == nil || u.Kind != jsontree.Object {
		return
	}
	for _, m := range u.Obj {
		if m.Val.Kind != jsontree.Null {
			a.usage[m.Key] = raw(m.Val)
		}
	}
}

func (a *assembler) item(i int) *itemAcc {
	it := a.items[i]
	if it == nil {
		if len(a.items) >= a.lim.MaxParts {
			a.out.degrade(StatusPartial)
			a.out.problem("more than %d output items: item %d not kept", a.lim.MaxParts, i)
			return nil
		}
		it = &itemAcc{}
		a.items[i] = it
	}
	return it
}

func (a *assembler) responsesEvent(s *shape, v *jsontree.Value) {
	typ := str(v.Get("type"))
	if !responsesEventKnown(typ) {
		a.out.degrade(statusAmbiguous)
		a.out.problem("%s has the type %q, which the openai SDK's stream accumulator rejects and a raw reader skips", s.name, typ)
		return
	}
	if why := a.resp.respStrict(typ, v); why != "" {
		a.out.degrade(statusAmbiguous)
		a.out.problem("%s (%s): %s; the openai SDK's stream accumulator throws on it and a raw reader goes on", s.name, typ, why)
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		r := v.Get("response")
		a.out.ID, a.out.Model = str(member(r, "id")), str(member(r, "model"))
	case "response.output_item.added", "response.output_item.done":
		i, ok := intMember(s, v, "output_index", "$.output_index")
		item := v.Get("item")
		if !ok || !s.want(item, "$.item", jsontree.Object, true) {
			return
		}
		it := a.item(i)
		if it == nil {
			return
		}
		if typ == "response.output_item.added" {
			it.typ, it.id, it.callID, it.name = str(item.Get("type")), str(item.Get("id")), str(item.Get("call_id")), str(item.Get("name"))
			it.added = raw(item)
			if ar := str(item.Get("arguments")); ar != "" {
				a.addText(&it.args, ar)
			}
			return
		}
		done := &Output{API: apiOpenAIResponses}
		done.responseItem(s, item, "$.item")
		it.done = done
		if it.typ == "" {
			it.typ = str(item.Get("type"))
		}
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		i, ok := intMember(s, v, "output_index", "$.output_index")
		d := v.Get("delta")
		if !ok || !s.want(d, "$.delta", jsontree.String, true) {
			return
		}
		it := a.item(i)
		if it == nil {
			return
		}
		switch typ {
		case "response.output_text.delta":
			a.addText(&it.text, d.Str)
		case "response.refusal.delta":
			a.addText(&it.refusal, d.Str)
		default:
			a.addText(&it.args, d.Str)
		}
	case "response.function_call_arguments.done":
		i, ok := intMember(s, v, "output_index", "$.output_index")
		ar := v.Get("arguments")
		if !ok || !s.want(ar, "$.arguments", jsontree.String, true) {
			return
		}
		if it := a.item(i); it != nil {
			d := ar.Str
			it.argsDone = &d
			if !a.textOver && d != it.args.String() {
				a.out.problem("output item %d: function_call_arguments.done differs from its deltas", i)
			}
		}
	case "response.completed", "response.incomplete", "response.failed":
		r := v.Get("response")
		fin := &Output{API: apiOpenAIResponses, Status: StatusComplete}
		fin.fromObject(s, r, "$.response")
		a.final = fin
		a.terminal = true
		if typ == "response.failed" {
			a.out.Status = StatusError
			if fin.Error == nil {
				fin.Error = raw(r)
			}
		}
	}
}

// Finish ends the stream and returns the assembled Output. cut says the
// connection was closed before the response ended (by either side); a
// stream that ends, cut or not, before its terminal event ([DONE],
// message_stop, response.completed, response.incomplete or
// response.failed) is partial, with everything received kept.
func (a *assembler) Finish(cut bool) *Output {
	o := a.out
	if n := a.sse.pending(); n > 0 {
		o.degrade(StatusPartial)
		o.problem("the stream ended inside an event: %d bytes not dispatched", n)
	}
	if a.api.valid() && !a.terminal {
		o.degrade(StatusPartial)
		how := "ended"
		if cut {
			how = "was cut"
		}
		o.problem("the stream %s before its terminal event (%s)", how, terminalOf(a.api))
	}
	if n := a.sse.bomLines; n > 0 {
		o.degrade(statusAmbiguous)
		o.problem("%d line(s) begin with a byte-order mark: the openai SDK drops the mark and reads the field, an SSE parser as the standard says ignores the line", n)
	}
	if a.after > 0 {
		// the openai SDK's responses stream reads on past
		// response.completed, @openai/agents stops there
		o.degrade(statusAmbiguous)
		o.problem("%d events after the terminal event: some clients read them, others stop at the terminal event", a.after)
	}
	switch a.api {
	case apiOpenAIChat:
		a.finishChat()
	case apiOpenAIResponses:
		a.finishResponses()
	case apiAnthropicMessages:
		a.finishAnthropic()
	}
	o.Body = BodyRef{Bytes: a.size, SHA256: hex.EncodeToString(a.hash.Sum(nil))}
	return o
}

func terminalOf(api API) string {
	switch api {
	case apiOpenAIChat:
		return "data: [DONE]"
	case apiAnthropicMessages:
		return "message_stop"
	}
	return "response.completed, response.incomplete or response.failed"
}

func sortedKeys[T any](m map[int]T) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

func (a *assembler) finishChat() {
	o := a.out
	o.Text, o.Refusal = a.text.String(), a.refusal.String()
	for n, k := range sortedKeys(a.calls) {
		c := a.calls[k]
		if k != n {
			o.degrade(statusAmbiguous)
			o.problem("tool call index %d follows index %d: the openai SDK's stream accumulator fails on the gap, @openai/agents keeps the call", k, n-1)
		}
		if c.ids > 1 || c.names > 1 {
			o.degrade(statusAmbiguous)
			o.problem("tool call index %d: its id came in %d deltas and its name in %d: the openai SDK keeps the last of each, @openai/agents joins them", k, c.ids, c.names)
		}
		tc := ToolCall{ID: c.id, Name: c.name}
		tc.setArguments(c.args.String())
		o.ToolCalls = append(o.ToolCalls, tc)
	}
}

func (a *assembler) finishAnthropic() {
	o := a.out
	if len(a.usage) > 0 {
		o.Usage = payload(a.usage)
	}
	var text strings.Builder
	for _, k := range sortedKeys(a.blocks) {
		b := a.blocks[k]
		if !b.stopped && a.terminal {
			o.degrade(StatusPartial)
			o.problem("content block %d was never stopped", k)
		}
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			tc := ToolCall{ID: b.id, Name: b.name}
			args := b.partial.String()
			if args == "" {
				args = b.startInput
			}
			tc.setArguments(args)
			o.ToolCalls = append(o.ToolCalls, tc)
		case "thinking":
			o.Reasoning = append(o.Reasoning, payload(map[string]string{"type": "thinking", "thinking": b.text.String(), "signature": b.signature.String()}))
		case "redacted_thinking":
			o.Reasoning = append(o.Reasoning, b.start)
		default:
			o.Other = append(o.Other, b.start)
		}
	}
	o.Text = text.String()
}

func (a *assembler) finishResponses() {
	o := a.out
	asm := &Output{}
	for _, k := range sortedKeys(a.items) {
		it := a.items[k]
		if it.done != nil {
			asm.Text += it.done.Text
			asm.Refusal += it.done.Refusal
			asm.ToolCalls = append(asm.ToolCalls, it.done.ToolCalls...)
			asm.Reasoning = append(asm.Reasoning, it.done.Reasoning...)
			asm.Other = append(asm.Other, it.done.Other...)
			if it.typ == "message" && !a.textOver && it.done.Text != it.text.String() {
				o.problem("output item %d: output_item.done text differs from its deltas", k)
			}
			continue
		}
		switch it.typ {
		case "message", "":
			asm.Text += it.text.String()
			asm.Refusal += it.refusal.String()
		case "function_call":
			tc := ToolCall{ID: it.callID, ItemID: it.id, Name: it.name}
			args := it.args.String()
			if it.argsDone != nil {
				args = *it.argsDone
			}
			tc.setArguments(args)
			asm.ToolCalls = append(asm.ToolCalls, tc)
		default:
			if it.typ == "reasoning" {
				asm.Reasoning = append(asm.Reasoning, it.added)
			} else {
				asm.Other = append(asm.Other, it.added)
			}
		}
	}
	if a.final == nil {
		o.Text, o.Refusal, o.ToolCalls, o.Reasoning, o.Other = asm.Text, asm.Refusal, asm.ToolCalls, asm.Reasoning, asm.Other
		return
	}
	f := a.final
	if !a.textOver && (f.Text != asm.Text || !sameCalls(f.ToolCalls, asm.ToolCalls)) {
		o.problem("the terminal event's response differs from the assembled events (the response is kept)")
	}
	o.ID, o.Model = f.ID, f.Model
	o.Text, o.Refusal, o.ToolCalls, o.Reasoning, o.Other = f.Text, f.Refusal, f.ToolCalls, f.Reasoning, f.Other
	o.StopReason, o.Usage = f.StopReason, f.Usage
	o.degrade(f.Status)
	if f.Error != nil {
		o.Error = f.Error
	}
	for _, p := range f.Problems {
		o.problem("%s", p)
	}
}

func sameCalls(x, y []ToolCall) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].ID != y[i].ID || x[i].Name != y[i].Name || x[i].Arguments != y[i].Arguments || !bytes.Equal(x[i].Input, y[i].Input) {
			return false
		}
	}
	return true
}
