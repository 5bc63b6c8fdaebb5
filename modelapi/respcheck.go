package modelapi

import (
	"fmt"
	"strconv"

	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// respState is what the openai SDK's Responses stream accumulator keeps
// to check a stream's consistency: the response's identity and, per wire
// output index, the item output_item.added gave and whether its
// output_item.done came.
type respState struct {
	created    bool
	id         string
	added      map[int]*respItem
	identities map[string]bool
}

type respItem struct {
	typ, id, callID string
	hasID, done     bool
}

// respStrict returns why the openai SDK's stream accumulator
// (responses.stream(), openai 7.55) throws on the event v of type typ, or
// "" when it accepts it. Where it throws, a client iterating the raw
// events acts on what the stream says while the SDK's client acts on an
// error, so the stream is ambiguous. The rules are the accumulator's:
// response.created first, one response identity, output indexes added
// once and used only once added, item events naming their item's id and
// type, output_item.done and response.completed keeping each item's
// identity.
func (st *respState) respStrict(typ string, v *jsontree.Value) string {
	if typ == "keepalive" || typ == "error" {
		return ""
	}
	if st.added == nil {
		st.added, st.identities = map[int]*respItem{}, map[string]bool{}
	}
	if !st.created && typ != "response.created" {
		return "it comes before response.created"
	}
	if respLifecycle(typ) {
		return st.lifecycle(typ, v)
	}
	want, scoped := respItemType(typ, v)
	idx, has := v.Lookup("output_index")
	if !has {
		if scoped {
			return "it has no output_index"
		}
		return ""
	}
	i, ok := safeIndex(idx)
	if !ok {
		return "its output_index is not a non-negative integer"
	}
	if typ == "response.output_item.added" {
		return st.add(i, v.Get("item"))
	}
	it := st.added[i]
	if it == nil {
		return "output index " + strconv.Itoa(i) + " was never added"
	}
	if typ == "response.output_item.done" {
		return st.done(it, v.Get("item"))
	}
	if !scoped {
		return ""
	}
	if iid := v.Get("item_id"); iid == nil || iid.Kind != jsontree.String || iid.Str == "" || !it.hasID || iid.Str != it.id {
		return fmt.Sprintf("its item_id is not %q, the id of output item %d", it.id, i)
	}
	if it.typ != want {
		return fmt.Sprintf("it needs an output item of type %q and item %d is a %q", want, i, it.typ)
	}
	return ""
}

func respLifecycle(typ string) bool {
	switch typ {
	case "response.created", "response.queued", "response.in_progress", "response.completed", "response.failed", "response.incomplete":
		return true
	}
	return false
}

// lifecycle checks a lifecycle event's response: an object, of the same
// id as the first, whose output items have valid distinct identities, and
// on response.completed holding every item that was added and not done.
func (st *respState) lifecycle(typ string, v *jsontree.Value) string {
	r, has := v.Lookup("response")
	if !has || r.Kind != jsontree.Object {
		return "it has no response object"
	}
	id := str(r.Get("id"))
	if st.created && id != st.id {
		return fmt.Sprintf("its response id %q is not the stream's %q", id, st.id)
	}
	st.created, st.id = true, id
	out := r.Get("output")
	if out == nil || out.Kind == jsontree.Null {
		return ""
	}
	if out.Kind != jsontree.Array {
		return "its response output is not an array"
	}
	final := map[string]bool{}
	for n, item := range out.Arr {
		keys, why := respIdentity(item)
		if why != "" {
			return fmt.Sprintf("its response output item %d %s", n, why)
		}
		for _, k := range keys {
			if final[k] {
				return "its response output repeats the identity " + k
			}
			final[k] = true
		}
	}
	if typ != "response.completed" {
		return ""
	}
	for _, i := range sortedKeys(st.added) {
		if it := st.added[i]; !it.done && !final[it.key()] {
			return fmt.Sprintf("output item %d was not done and is not in the completed response", i)
		}
	}
	return ""
}

func (st *respState) add(i int, item *jsontree.Value) string {
	if item == nil || item.Kind == jsontree.Null {
		return "" // the accumulator ignores an added event without its item
	}
	if st.added[i] != nil {
		return "output index " + strconv.Itoa(i) + " is added twice"
	}
	keys, why := respIdentity(item)
	if why != "" {
		return "its item " + why
	}
	for _, k := range keys {
		if st.identities[k] {
			return "its item repeats the identity " + k
		}
	}
	for _, k := range keys {
		st.identities[k] = true
	}
	it := &respItem{typ: str(item.Get("type")), callID: str(item.Get("call_id"))}
	if idv, ok := item.Lookup("id"); ok {
		it.id, it.hasID = idv.Str, true
	}
	st.added[i] = it
	return ""
}

func (st *respState) done(it *respItem, item *jsontree.Value) string {
	if _, why := respIdentity(item); why != "" {
		return "its item " + why
	}
	if typ := str(item.Get("type")); typ != it.typ {
		return fmt.Sprintf("its item is a %q and the added item a %q", typ, it.typ)
	}
	idv, has := item.Lookup("id")
	optional := !it.hasID && (it.typ == "function_call" || it.typ == "custom_tool_call")
	if !optional && (has != it.hasID || (has && idv.Str != it.id)) {
		return fmt.Sprintf("its item id is not the added item's %q", it.id)
	}
	if respCallScoped(it.typ) && str(item.Get("call_id")) != it.callID {
		return fmt.Sprintf("its call_id is not the added item's %q", it.callID)
	}
	it.done = true
	return ""
}

// key is the identity the SDK finds an item by in the completed
// response: its id, or for a call without one its call id.
func (it *respItem) key() string {
	if it.hasID {
		return "id:" + it.id
	}
	return "call:" + it.typ + ":" + it.callID
}

// respIdentity returns an output item's identity keys as the accumulator
// builds them, or why it has none.
func respIdentity(item *jsontree.Value) ([]string, string) {
	if item == nil || item.Kind != jsontree.Object {
		return nil, "is not an object"
	}
	t := item.Get("type")
	if t == nil || t.Kind != jsontree.String {
		return nil, "has no type"
	}
	var keys []string
	if idv, ok := item.Lookup("id"); ok {
		if idv.Kind != jsontree.String || (idv.Str == "" && t.Str != "computer_call") {
			return nil, "has an id that is not a non-empty string"
		}
		keys = append(keys, "id:"+idv.Str)
	} else if t.Str != "function_call" && t.Str != "custom_tool_call" {
		return nil, "has no id"
	}
	if respCallScoped(t.Str) {
		c := item.Get("call_id")
		if c == nil || c.Kind != jsontree.String || (c.Str == "" && t.Str != "function_call") {
			return nil, "has no call_id"
		}
		keys = append(keys, "call:"+t.Str+":"+c.Str)
	}
	return keys, ""
}

func respCallScoped(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "shell_call", "shell_call_output":
		return true
	}
	return false
}

// respItemType returns the output item type an item-scoped event needs,
// and whether the event is item-scoped.
func respItemType(typ string, v *jsontree.Value) (string, bool) {
	switch typ {
	case "response.content_part.added", "response.content_part.done":
		if str(member(v.Get("part"), "type")) == "reasoning_text" {
			return "reasoning", true
		}
		return "message", true
	case "response.output_text.delta", "response.output_text.done", "response.output_text.annotation.added",
		"response.refusal.delta", "response.refusal.done":
		return "message", true
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		return "function_call", true
	case "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done":
		return "custom_tool_call", true
	case "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
		"response.mcp_call.in_progress", "response.mcp_call.completed", "response.mcp_call.failed":
		return "mcp_call", true
	case "response.shell_call_output_content.delta", "response.shell_call_output_content.done":
		return "shell_call_output", true
	case "response.reasoning_text.delta", "response.reasoning_text.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done":
		return "reasoning", true
	case "response.code_interpreter_call_code.delta", "response.code_interpreter_call_code.done",
		"response.code_interpreter_call.in_progress", "response.code_interpreter_call.interpreting",
		"response.code_interpreter_call.completed":
		return "code_interpreter_call", true
	case "response.file_search_call.in_progress", "response.file_search_call.searching", "response.file_search_call.completed":
		return "file_search_call", true
	case "response.web_search_call.in_progress", "response.web_search_call.searching", "response.web_search_call.completed":
		return "web_search_call", true
	case "response.image_generation_call.in_progress", "response.image_generation_call.generating",
		"response.image_generation_call.completed", "response.image_generation_call.partial_image":
		return "image_generation_call", true
	case "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_list_tools.failed":
		return "mcp_list_tools", true
	case "response.compaction.compacting":
		return "compaction", true
	}
	return "", false
}

// safeIndex reads an output index as the SDK accepts it: a non-negative
// integer (1.0 is the integer 1 in JavaScript). The SDK allows up to 2^53;
// the witness keeps at most 2^31 items, so a larger index is ambiguous too.
func safeIndex(v *jsontree.Value) (int, bool) {
	if v.Kind != jsontree.Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.Num), 64)
	if err != nil || f < 0 || f > 1<<31 || f != float64(int64(f)) {
		return 0, false
	}
	return int(f), true
}
