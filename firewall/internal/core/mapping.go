package core

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// MappingFormat is the format string of a message mapping file.
const MappingFormat = "witness-message-mapping/v1"

// MaxMappingBytes bounds a mapping file.
const MaxMappingBytes = 1 << 20

// Mapping says which MCP tools send and deliver application messages and
// where in their payloads the message fields are.
type Mapping struct {
	LocalAgent string
	Send       []SendRule
	Deliver    []DeliverRule
}

// FieldRef is a literal value or a JSON path ("$.a.b[0]", the one dialect
// of docs/formats/json-path.md, naming one value) into a payload.
type FieldRef struct {
	Path    *jsonpath.Path // nil for a literal
	Literal string
	Raw     string
	set     bool
}

// SendRule maps a tool call to an outgoing message. Paths apply to the
// call's arguments; ResultPostID, when set, to the tool's result.
type SendRule struct {
	Tool          string
	Conversation  FieldRef
	Recipients    FieldRef
	Text          FieldRef
	Operation     FieldRef
	PostID        FieldRef
	ResultPostID  FieldRef
	AuthorAgentID FieldRef
	Collective    CollectiveRefs
}

// DeliverRule maps a tool's result to incoming messages: Items selects the
// delivered items (an array, or one object); the other paths apply to each
// item. ItemsJSON parses the selected string as JSON first.
type DeliverRule struct {
	Tool          string
	Items         FieldRef
	ItemsJSON     bool
	Conversation  FieldRef
	Sender        FieldRef
	Recipients    FieldRef
	Text          FieldRef
	Operation     FieldRef
	PostID        FieldRef
	AuthorAgentID FieldRef
	Collective    CollectiveRefs
}

const mappingHint = "see docs/formats/firewall.md for the message mapping format"

// LoadMapping reads and decodes a mapping file (a configuration input: its
// errors carry the Usage code).
func LoadMapping(path string) (*Mapping, error) {
	data, err := readConfig(path, "mapping", "check the path of the mapping file", MaxMappingBytes)
	if err != nil {
		return nil, err
	}
	return DecodeMapping(data, path)
}

// DecodeMapping decodes a mapping document.
func DecodeMapping(data []byte, name string) (*Mapping, error) {
	if err := checkConfigDepth(data, name, mappingHint); err != nil {
		return nil, err
	}
	if len(data) > MaxMappingBytes {
		return nil, exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Msg: "mapping exceeds 1 MiB"}, mappingHint)
	}
	root, err := parseConfigTree(data, name, mappingHint)
	if err != nil {
		return nil, err
	}
	d := &policyDecoder{data: data, name: name}
	m := d.mapping(root)
	if d.err != nil {
		return nil, exitcode.New(exitcode.Usage, d.err, mappingHint)
	}
	return m, nil
}

func (d *policyDecoder) ref(n *jsontree.Value, path string) FieldRef {
	s := d.str(n, path, true)
	if d.err != nil {
		return FieldRef{}
	}
	r, err := parseFieldRef(s)
	if err != nil {
		d.fail(n, path, "%v", err)
	}
	return r
}

func parseFieldRef(s string) (FieldRef, error) {
	r := FieldRef{Raw: s, set: true}
	if !strings.HasPrefix(s, "$") {
		r.Literal = s
		return r, nil
	}
	p, err := jsonpath.ParseSingular(s)
	if err != nil {
		return r, err
	}
	r.Path = &p
	return r, nil
}

func (d *policyDecoder) mapping(root *jsontree.Value) *Mapping {
	if !d.object(root, "$", "format", "localAgent", "send", "deliver") {
		return nil
	}
	m := &Mapping{}
	if n, ok := root.Lookup("format"); !ok {
		d.fail(root, "$.format", "required property is missing (want %q)", MappingFormat)
	} else if s := d.str(n, "$.format", false); d.err == nil && s != MappingFormat {
		d.fail(n, "$.format", "unsupported format %q (want %q)", s, MappingFormat)
	}
	if n, ok := root.Lookup("localAgent"); !ok {
		d.fail(root, "$.localAgent", "required property is missing: the agent id of our agent (the sender of sends)")
	} else {
		m.LocalAgent = d.str(n, "$.localAgent", true)
	}
	if n, ok := root.Lookup("send"); ok {
		if n.Kind != jsontree.Array {
			d.fail(n, "$.send", "expected an array, got %s", n.Kind.String())
			return nil
		}
		for i, it := range n.Arr {
			p := fmt.Sprintf("$.send[%d]", i)
			if !d.object(it, p, append([]string{"tool", "conversation", "recipients", "text", "operation", "postId", "resultPostId", "authorAgentId"}, collectiveMappingKeys...)...) {
				return nil
			}
			var s SendRule
			for _, req := range []string{"tool", "conversation", "text"} {
				if _, ok := it.Lookup(req); !ok {
					d.fail(it, p+"."+req, "required property is missing")
					return nil
				}
			}
			s.Tool = d.str(it.Get("tool"), p+".tool", true)
			set := func(k string, dst *FieldRef) {
				if v, ok := it.Lookup(k); ok {
					*dst = d.ref(v, p+"."+k)
				}
			}
			set("conversation", &s.Conversation)
			set("recipients", &s.Recipients)
			set("text", &s.Text)
			set("operation", &s.Operation)
			set("postId", &s.PostID)
			set("resultPostId", &s.ResultPostID)
			set("authorAgentId", &s.AuthorAgentID)
			s.Collective = d.collectiveRefs(it, p)
			if !s.Operation.set {
				s.Operation = FieldRef{Literal: "direct", Raw: "direct", set: true}
			}
			m.Send = append(m.Send, s)
		}
	}
	if n, ok := root.Lookup("deliver"); ok {
		if n.Kind != jsontree.Array {
			d.fail(n, "$.deliver", "expected an array, got %s", n.Kind.String())
			return nil
		}
		for i, it := range n.Arr {
			p := fmt.Sprintf("$.deliver[%d]", i)
			if !d.object(it, p, append([]string{"tool", "items", "itemsJson", "conversation", "sender", "recipients", "text", "operation", "postId", "authorAgentId"}, collectiveMappingKeys...)...) {
				return nil
			}
			var r DeliverRule
			for _, req := range []string{"tool", "items", "conversation", "sender", "text"} {
				if _, ok := it.Lookup(req); !ok {
					d.fail(it, p+"."+req, "required property is missing")
					return nil
				}
			}
			r.Tool = d.str(it.Get("tool"), p+".tool", true)
			if v, ok := it.Lookup("itemsJson"); ok {
				if v.Kind != jsontree.Bool {
					d.fail(v, p+".itemsJson", "expected a boolean, got %s", v.Kind.String())
				}
				r.ItemsJSON = v.Bool
			}
			set := func(k string, dst *FieldRef) {
				if v, ok := it.Lookup(k); ok {
					*dst = d.ref(v, p+"."+k)
				}
			}
			set("items", &r.Items)
			if d.err == nil && r.Items.Path == nil {
				d.fail(it.Get("items"), p+".items", "must be a JSON path starting with $")
			}
			set("conversation", &r.Conversation)
			set("sender", &r.Sender)
			set("recipients", &r.Recipients)
			set("text", &r.Text)
			set("operation", &r.Operation)
			set("postId", &r.PostID)
			set("authorAgentId", &r.AuthorAgentID)
			r.Collective = d.collectiveRefs(it, p)
			if !r.Operation.set {
				r.Operation = FieldRef{Literal: "direct", Raw: "direct", set: true}
			}
			m.Deliver = append(m.Deliver, r)
		}
	}
	if d.err == nil && len(m.Send)+len(m.Deliver) == 0 {
		d.fail(root, "$", "the mapping names no send and no deliver tool")
	}
	return m
}

// resolveString returns the string a reference names in v.
func resolveString(r FieldRef, v any, field string) (string, error) {
	if !r.set {
		return "", nil
	}
	if r.Path == nil {
		return r.Literal, nil
	}
	x, ok := r.Path.Lookup(v)
	if !ok {
		return "", fmt.Errorf("%s: path %s not found", field, r.Raw)
	}
	switch t := x.(type) {
	case string:
		return t, nil
	case json.Number:
		return t.String(), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("%s: path %s is not a string", field, r.Raw)
}

// resolveList returns the agent ids a reference names: a string or an array
// of strings.
func resolveList(r FieldRef, v any, field string) ([]string, error) {
	if !r.set {
		return nil, nil
	}
	if r.Path == nil {
		return []string{r.Literal}, nil
	}
	x, ok := r.Path.Lookup(v)
	if !ok {
		return nil, fmt.Errorf("%s: path %s not found", field, r.Raw)
	}
	switch t := x.(type) {
	case string:
		return []string{t}, nil
	case []any:
		out := []string{}
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: path %s[%d] is not a string", field, r.Raw, i)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: path %s is not a string or an array of strings", field, r.Raw)
}

type deriver struct {
	m       *Mapping
	pending map[string]pendingSend // tool_call id -> send waiting for its result
	order   []string
}

type pendingSend struct {
	rule SendRule
	msg  Candidate
}

func newDeriver(m *Mapping) *deriver { return &deriver{m: m, pending: map[string]pendingSend{}} }

func decodeAny(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// derive returns the messages that event ev produces under the mapping.
// Derived message ids are the source event id and ".m<k>".
func (d *deriver) derive(ev *eventlog.Event) ([]Candidate, error) {
	switch ev.Kind {
	case eventlog.KindToolCall:
		for _, s := range d.m.Send {
			if s.Tool == ev.Tool {
				return d.send(s, ev)
			}
		}
	case eventlog.KindToolResponse:
		return d.deliver(ev)
	}
	return nil, nil
}

// send derives the outgoing message of a tool call that rule s maps; one
// whose post id comes from the result waits for it.
func (d *deriver) send(s SendRule, ev *eventlog.Event) ([]Candidate, error) {
	args, err := decodeAny(ev.Payload)
	if err != nil {
		return nil, fmt.Errorf("tool_call %s payload: %w", ev.ID, err)
	}
	msg := eventlog.Message{Direction: Outgoing, Sender: d.m.LocalAgent}
	if err := resolveInto(args, &msg, []strField{{&msg.Conversation, s.Conversation, "conversation"}, {&msg.Text, s.Text, "text"}},
		s.Recipients, []strField{{&msg.Operation, s.Operation, "operation"}, {&msg.PostID, s.PostID, "postId"},
			{&msg.AuthorAgentID, s.AuthorAgentID, "authorAgentId"}}); err != nil {
		return nil, fmt.Errorf("send %s (%s): %w", ev.Tool, ev.ID, err)
	}
	if err := resolveCollective(s.Collective, args, &msg); err != nil {
		return nil, fmt.Errorf("send %s (%s): %w", ev.Tool, ev.ID, err)
	}
	if field, err := ValidateMessage(&msg); err != nil {
		return nil, fmt.Errorf("send %s (%s): derived %s: %w", ev.Tool, ev.ID, field, err)
	}
	c := Candidate{Event: ev.ID + ".m0", Message: msg, ts: ev.TS, cause: ev.ID}
	if s.ResultPostID.set {
		d.pending[ev.ID] = pendingSend{rule: s, msg: c}
		d.order = append(d.order, ev.ID)
		return nil, nil
	}
	return []Candidate{c}, nil
}

// deliver derives the messages of a tool response: a send waiting for
// its result, then the items each deliver rule maps.
func (d *deriver) deliver(ev *eventlog.Event) ([]Candidate, error) {
	var out []Candidate
	if p, ok := d.pending[ev.Call]; ok {
		delete(d.pending, ev.Call)
		if res, err := decodeAny(ev.Payload); err == nil && !ev.RPCError {
			if id, err := resolveString(p.rule.ResultPostID, res, "resultPostId"); err == nil {
				p.msg.Message.PostID = id
				if p.msg.Message.AuthorAgentID == "" {
					p.msg.Message.AuthorAgentID = p.msg.Message.Sender
				}
			}
		}
		out = append(out, p.msg)
	}
	for _, r := range d.m.Deliver {
		if r.Tool != ev.Tool || ev.RPCError {
			continue
		}
		items, err := deliveredItems(r, ev)
		if err != nil {
			return nil, err
		}
		for k, item := range items {
			msg, err := d.deliveredMessage(r, item)
			if err != nil {
				return nil, fmt.Errorf("deliver %s (%s) item %d: %w", ev.Tool, ev.ID, k, err)
			}
			out = append(out, Candidate{Event: fmt.Sprintf("%s.m%d", ev.ID, k), Message: msg})
		}
	}
	return out, nil
}

// deliveredItems are the items at rule r's path in a tool result: none
// for an empty or error result, one for a value that is not an array.
func deliveredItems(r DeliverRule, ev *eventlog.Event) ([]any, error) {
	res, err := decodeAny(ev.Payload)
	if err != nil {
		return nil, fmt.Errorf("tool_response %s payload: %w", ev.ID, err)
	}
	x, ok := r.Items.Path.Lookup(res)
	if !ok {
		return nil, nil // nothing delivered (an empty or error result)
	}
	if r.ItemsJSON {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("deliver %s (%s): items path %s is not a string to parse as JSON", ev.Tool, ev.ID, r.Items.Raw)
		}
		if x, err = decodeAny(json.RawMessage(s)); err != nil {
			return nil, fmt.Errorf("deliver %s (%s): items are not JSON: %w", ev.Tool, ev.ID, err)
		}
	}
	if items, isArr := x.([]any); isArr {
		return items, nil
	}
	return []any{x}, nil
}

// deliveredMessage is the incoming message rule r maps one item to.
func (d *deriver) deliveredMessage(r DeliverRule, item any) (eventlog.Message, error) {
	msg := eventlog.Message{Direction: Incoming}
	if err := resolveInto(item, &msg, []strField{{&msg.Conversation, r.Conversation, "conversation"}, {&msg.Sender, r.Sender, "sender"}, {&msg.Text, r.Text, "text"}},
		r.Recipients, []strField{{&msg.Operation, r.Operation, "operation"}, {&msg.PostID, r.PostID, "postId"},
			{&msg.AuthorAgentID, r.AuthorAgentID, "authorAgentId"}}); err != nil {
		return msg, err
	}
	if !r.Recipients.set {
		msg.Recipients = []string{d.m.LocalAgent}
	}
	if msg.PostID != "" && msg.AuthorAgentID == "" {
		msg.AuthorAgentID = msg.Sender
	}
	if err := resolveCollective(r.Collective, item, &msg); err != nil {
		return msg, err
	}
	if field, err := ValidateMessage(&msg); err != nil {
		return msg, fmt.Errorf("derived %s: %w", field, err)
	}
	return msg, nil
}

// strField is one string field of a message and the path it comes from.
type strField struct {
	dst  *string
	from FieldRef
	name string
}

// resolveInto fills a message's fields from v in the order a mapping
// lists them (the first failure is the one reported): the before fields,
// the recipients, the after fields.
func resolveInto(v any, msg *eventlog.Message, before []strField, recipients FieldRef, after []strField) error {
	var err error
	for _, f := range before {
		if *f.dst, err = resolveString(f.from, v, f.name); err != nil {
			return err
		}
	}
	if msg.Recipients, err = resolveList(recipients, v, "recipients"); err != nil {
		return err
	}
	for _, f := range after {
		if *f.dst, err = resolveString(f.from, v, f.name); err != nil {
			return err
		}
	}
	return nil
}

// flush returns the sends still waiting for a result at the end of a log.
func (d *deriver) flush() []Candidate {
	var out []Candidate
	for _, id := range d.order {
		if p, ok := d.pending[id]; ok {
			out = append(out, p.msg)
			delete(d.pending, id)
		}
	}
	return out
}
