package main

import "encoding/json"

func created(a *Answer) int64 {
	if a.Created == 0 {
		return 1767225600
	}
	return a.Created
}

// ---- OpenAI Chat Completions ----

func chatStop(a *Answer) string {
	if a.Stop != "" {
		return a.Stop
	}
	if len(a.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(a *Answer) obj {
	return obj{{"prompt_tokens", a.Usage.Input}, {"completion_tokens", a.Usage.Output}, {"total_tokens", a.Usage.Input + a.Usage.Output},
		{"prompt_tokens_details", obj{{"cached_tokens", 0}, {"audio_tokens", 0}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", 0}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}}}
}

func chatCompletion(a *Answer) any {
	var content any
	if a.Text != "" {
		content = a.Text
	}
	msg := obj{{"role", "assistant"}, {"content", content}}
	if len(a.ToolCalls) > 0 {
		var calls []any
		for _, c := range a.ToolCalls {
			calls = append(calls, obj{{"id", c.ID}, {"type", "function"}, {"function", obj{{"name", c.Name}, {"arguments", c.Arguments}}}})
		}
		msg = append(msg, kv{"tool_calls", calls})
	}
	msg = append(msg, kv{"refusal", nil}, kv{"annotations", []any{}})
	return obj{{"id", or(a.ID, "chatcmpl-witness0001")}, {"object", "chat.completion"}, {"created", created(a)}, {"model", or(a.Model, "gpt-4o-2024-08-06")},
		{"choices", []any{obj{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", chatStop(a)}}}},
		{"usage", chatUsage(a)}, {"service_tier", "default"}, {"system_fingerprint", "fp_witness01"}}
}

func chatStream(a *Answer, includeUsage bool) []sse {
	chunk := func(delta obj, finish any) sse {
		c := obj{{"id", or(a.ID, "chatcmpl-witness0001")}, {"object", "chat.completion.chunk"}, {"created", created(a)}, {"model", or(a.Model, "gpt-4o-2024-08-06")},
			{"service_tier", "default"}, {"system_fingerprint", "fp_witness01"},
			{"choices", []any{obj{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}}}
		if includeUsage {
			c = append(c, kv{"usage", nil})
		}
		return sse{data: c}
	}
	evs := []sse{chunk(obj{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}, nil)}
	for _, f := range fragments(a.Text, a.Delta) {
		evs = append(evs, chunk(obj{{"content", f}}, nil))
	}
	// tool calls: each call's first fragment names it, then the argument
	// fragments of all calls interleave by index (parallel tool calls)
	frags := make([][]string, len(a.ToolCalls))
	for i, c := range a.ToolCalls {
		evs = append(evs, chunk(obj{{"tool_calls", []any{obj{{"index", i}, {"id", c.ID}, {"type", "function"}, {"function", obj{{"name", c.Name}, {"arguments", ""}}}}}}}, nil))
		frags[i] = fragments(c.Arguments, a.Delta)
	}
	for more := true; more; {
		more = false
		for i := range frags {
			if len(frags[i]) == 0 {
				continue
			}
			more = true
			evs = append(evs, chunk(obj{{"tool_calls", []any{obj{{"index", i}, {"function", obj{{"arguments", frags[i][0]}}}}}}}, nil))
			frags[i] = frags[i][1:]
		}
	}
	evs = append(evs, chunk(obj{}, chatStop(a)))
	if includeUsage {
		evs = append(evs, sse{data: obj{{"id", or(a.ID, "chatcmpl-witness0001")}, {"object", "chat.completion.chunk"}, {"created", created(a)}, {"model", or(a.Model, "gpt-4o-2024-08-06")},
			{"service_tier", "default"}, {"system_fingerprint", "fp_witness01"}, {"choices", []any{}}, {"usage", chatUsage(a)}}})
	}
	return append(evs, sse{data: "[DONE]"})
}

// ---- OpenAI Responses ----

func respItems(a *Answer, done bool) []obj {
	var items []obj
	status := "completed"
	if a.Thinking != "" {
		items = append(items, obj{{"id", "rs_witness0001"}, {"type", "reasoning"}, {"summary", []any{obj{{"type", "summary_text"}, {"text", a.Thinking}}}}})
	}
	if a.Text != "" {
		items = append(items, obj{{"id", "msg_witness0001"}, {"type", "message"}, {"status", status}, {"content", []any{obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", a.Text}}}}, {"role", "assistant"}})
	}
	for i, c := range a.ToolCalls {
		items = append(items, obj{{"id", or(c.ItemID, "fc_witness000"+string(rune('1'+i)))}, {"type", "function_call"}, {"status", status}, {"arguments", c.Arguments}, {"call_id", c.ID}, {"name", c.Name}})
	}
	return items
}

func respUsage(a *Answer) obj {
	return obj{{"input_tokens", a.Usage.Input}, {"input_tokens_details", obj{{"cached_tokens", 0}}}, {"output_tokens", a.Usage.Output},
		{"output_tokens_details", obj{{"reasoning_tokens", 0}}}, {"total_tokens", a.Usage.Input + a.Usage.Output}}
}

func response(a *Answer, status string) obj {
	var output []any
	var usage any
	if status == "completed" {
		for _, it := range respItems(a, true) {
			output = append(output, it)
		}
		usage = respUsage(a)
	}
	if output == nil {
		output = []any{}
	}
	return obj{{"id", or(a.ID, "resp_witness0001")}, {"object", "response"}, {"created_at", created(a)}, {"status", status}, {"background", false},
		{"error", nil}, {"incomplete_details", nil}, {"instructions", nil}, {"max_output_tokens", nil}, {"model", or(a.Model, "gpt-4o-2024-08-06")},
		{"output", output}, {"parallel_tool_calls", true}, {"previous_response_id", nil}, {"reasoning", obj{{"effort", nil}, {"summary", nil}}},
		{"store", true}, {"temperature", 1.0}, {"text", obj{{"format", obj{{"type", "text"}}}}}, {"tool_choice", "auto"}, {"tools", []any{}},
		{"top_p", 1.0}, {"truncation", "disabled"}, {"usage", usage}, {"user", nil}, {"metadata", obj{}}}
}

func with(o obj, k string, v any) obj {
	out := obj{}
	for _, m := range o {
		if m.k == k {
			out = append(out, kv{k, v})
		} else {
			out = append(out, m)
		}
	}
	return out
}

func responseStream(a *Answer) []sse {
	var evs []sse
	seq := 0
	ev := func(typ string, rest ...kv) {
		evs = append(evs, sse{typ, append(obj{{"type", typ}}, append(rest, kv{"sequence_number", seq})...)})
		seq++
	}
	ev("response.created", kv{"response", response(a, "in_progress")})
	ev("response.in_progress", kv{"response", response(a, "in_progress")})
	for i, it := range respItems(a, true) {
		id := it[0].v.(string)
		switch it[1].v {
		case "reasoning":
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", obj{{"id", id}, {"type", "reasoning"}, {"summary", []any{}}}})
			ev("response.output_item.done", kv{"output_index", i}, kv{"item", it})
		case "message":
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", obj{{"id", id}, {"type", "message"}, {"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}}})
			ev("response.content_part.added", kv{"item_id", id}, kv{"output_index", i}, kv{"content_index", 0}, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", ""}}})
			for _, f := range fragments(a.Text, a.Delta) {
				ev("response.output_text.delta", kv{"item_id", id}, kv{"output_index", i}, kv{"content_index", 0}, kv{"delta", f}, kv{"logprobs", []any{}})
			}
			ev("response.output_text.done", kv{"item_id", id}, kv{"output_index", i}, kv{"content_index", 0}, kv{"text", a.Text}, kv{"logprobs", []any{}})
			ev("response.content_part.done", kv{"item_id", id}, kv{"output_index", i}, kv{"content_index", 0}, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", a.Text}}})
			ev("response.output_item.done", kv{"output_index", i}, kv{"item", it})
		case "function_call":
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", with(with(it, "status", "in_progress"), "arguments", "")})
			args := it[3].v.(string)
			for _, f := range fragments(args, a.Delta) {
				ev("response.function_call_arguments.delta", kv{"item_id", id}, kv{"output_index", i}, kv{"delta", f})
			}
			ev("response.function_call_arguments.done", kv{"item_id", id}, kv{"output_index", i}, kv{"arguments", args})
			ev("response.output_item.done", kv{"output_index", i}, kv{"item", it})
		}
	}
	ev("response.completed", kv{"response", response(a, "completed")})
	return evs
}

// ---- Anthropic Messages ----

func anthStop(a *Answer) string {
	if a.Stop != "" {
		return a.Stop
	}
	if len(a.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func anthBlocks(a *Answer) []obj {
	var bs []obj
	if a.Thinking != "" {
		bs = append(bs, obj{{"type", "thinking"}, {"thinking", a.Thinking}, {"signature", a.Signature}})
	}
	if a.Text != "" {
		bs = append(bs, obj{{"type", "text"}, {"text", a.Text}})
	}
	for _, c := range a.ToolCalls {
		bs = append(bs, obj{{"type", "tool_use"}, {"id", c.ID}, {"name", c.Name}, {"input", json.RawMessage(c.Arguments)}})
	}
	return bs
}

func anthropicMessage(a *Answer, start bool) obj {
	var content []any
	var stop any
	usage := obj{{"input_tokens", a.Usage.Input}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}, {"output_tokens", a.Usage.Output}, {"service_tier", "standard"}}
	if start {
		content = []any{}
		usage = with(usage, "output_tokens", 1)
	} else {
		for _, b := range anthBlocks(a) {
			content = append(content, b)
		}
		stop = anthStop(a)
	}
	return obj{{"id", or(a.ID, "msg_witness0001")}, {"type", "message"}, {"role", "assistant"}, {"model", or(a.Model, "claude-sonnet-4-5-20250929")},
		{"content", content}, {"stop_reason", stop}, {"stop_sequence", nil}, {"usage", usage}}
}

func anthropicStream(a *Answer) []sse {
	evs := []sse{{"message_start", obj{{"type", "message_start"}, {"message", anthropicMessage(a, true)}}}, {"ping", obj{{"type", "ping"}}}}
	for i, b := range anthBlocks(a) {
		ev := func(typ string, rest ...kv) {
			evs = append(evs, sse{typ, append(obj{{"type", typ}, {"index", i}}, rest...)})
		}
		switch b[0].v {
		case "thinking":
			ev("content_block_start", kv{"content_block", obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}})
			for _, f := range fragments(a.Thinking, a.Delta) {
				ev("content_block_delta", kv{"delta", obj{{"type", "thinking_delta"}, {"thinking", f}}})
			}
			ev("content_block_delta", kv{"delta", obj{{"type", "signature_delta"}, {"signature", a.Signature}}})
		case "text":
			ev("content_block_start", kv{"content_block", obj{{"type", "text"}, {"text", ""}}})
			for _, f := range fragments(a.Text, a.Delta) {
				ev("content_block_delta", kv{"delta", obj{{"type", "text_delta"}, {"text", f}}})
			}
		case "tool_use":
			ev("content_block_start", kv{"content_block", obj{{"type", "tool_use"}, {"id", b[1].v}, {"name", b[2].v}, {"input", obj{}}}})
			ev("content_block_delta", kv{"delta", obj{{"type", "input_json_delta"}, {"partial_json", ""}}})
			for _, f := range fragments(string(b[3].v.(json.RawMessage)), a.Delta) {
				ev("content_block_delta", kv{"delta", obj{{"type", "input_json_delta"}, {"partial_json", f}}})
			}
		}
		ev("content_block_stop")
	}
	evs = append(evs, sse{"message_delta", obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", anthStop(a)}, {"stop_sequence", nil}}},
		{"usage", obj{{"output_tokens", a.Usage.Output}}}}})
	return append(evs, sse{"message_stop", obj{{"type", "message_stop"}}})
}
