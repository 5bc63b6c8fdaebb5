package derive

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"
)

// EnvRedactKey holds the redaction key (hex, at least 16 bytes) when no key
// file is given.
const EnvRedactKey = "WITNESS_REDACT_KEY"

var tokenRe = regexp.MustCompile(`redacted:hmac-sha256:[0-9a-f]{64}`)

// RedactRule is one parsed redaction rule: a JSON path or a regular
// expression over string values.
type RedactRule struct {
	Text  string         // as written
	path  *jsonpath.Path // the one JSON-path dialect (docs/formats/json-path.md)
	regex *regexp.Regexp
}

// ParseRedactRule parses one rule: "$.a.b", "$..password", "$.items[0]",
// "$.a[*].b", "$['odd key']", or "re:REGEXP" (Go RE2 syntax), which matches
// parts of string values.
func ParseRedactRule(s string) (RedactRule, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "re:"):
		expr := s[len("re:"):]
		if expr == "" {
			return RedactRule{}, errors.New("empty regular expression after \"re:\"")
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return RedactRule{}, fmt.Errorf("regular expression: %w", err)
		}
		if re.MatchString("") {
			return RedactRule{}, fmt.Errorf("regular expression %q matches the empty string", expr)
		}
		return RedactRule{Text: s, regex: re}, nil
	case strings.HasPrefix(s, "$"):
		p, err := jsonpath.Parse(s)
		if err != nil {
			return RedactRule{}, err
		}
		if len(p.Steps) == 0 {
			return RedactRule{}, fmt.Errorf("path %q selects the whole value; name a member", s)
		}
		return RedactRule{Text: s, path: &p}, nil
	}
	return RedactRule{}, fmt.Errorf("rule %q is neither a JSON path (\"$.a.b\", \"$..key\") nor a regular expression (\"re:...\")", s)
}

// parseRedactRules parses a rules file: one rule per line; blank lines and
// lines starting with # are ignored. Errors name the file and line.
func parseRedactRules(data []byte, name string) ([]RedactRule, error) {
	var rules []RedactRule
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if !utf8.ValidString(t) {
			return nil, &jsontree.Error{File: name, Line: int64(line), Msg: "rule is not valid UTF-8"}
		}
		r, err := ParseRedactRule(t)
		if err != nil {
			return nil, &jsontree.Error{File: name, Line: int64(line), Err: err}
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, &jsontree.Error{File: name, Line: int64(line + 1), Err: err}
	}
	return rules, nil
}

// Redactor replaces secret values by a keyed hash, "redacted:hmac-sha256:<hex>",
// so that secrets never reach disk and identical values still match.
type Redactor struct {
	rules []RedactRule
	key   []byte
	keyID string
}

// NewRedactor returns a redactor with the given rules and key (at least 16 bytes).
func NewRedactor(rules []RedactRule, key []byte) (*Redactor, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("redaction key has %d bytes; it needs at least 16", len(key))
	}
	sum := sha256.Sum256(key)
	return &Redactor{rules: rules, key: append([]byte(nil), key...), keyID: "sha256:" + hex.EncodeToString(sum[:8])}, nil
}

// RedactOptions say where rules and key come from (the CLI's --redact,
// --redact-rules and --redact-key flags).
type RedactOptions struct {
	Rules     []string // rules given one by one
	RulesFile string   // a rules file
	KeyFile   string   // a file holding the key in hex
	KeyHex    string   // the key in hex (e.g. from WITNESS_REDACT_KEY) when KeyFile is empty
}

// LoadRedactor builds a redactor from options; it returns nil, nil when no
// rule is given. Errors carry exitcode Usage.
func LoadRedactor(o RedactOptions) (*Redactor, error) {
	var rules []RedactRule
	for _, s := range o.Rules {
		r, err := ParseRedactRule(s)
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--redact %q: %w", s, err), "see docs/formats/events.md, section redaction, for the rule syntax")
		}
		rules = append(rules, r)
	}
	if o.RulesFile != "" {
		data, err := os.ReadFile(o.RulesFile)
		if err != nil {
			return nil, exitcode.Input("read redaction rules", err, "check the path given to --redact-rules")
		}
		rs, err := parseRedactRules(data, o.RulesFile)
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("redaction rules %w", err), "see docs/formats/events.md, section redaction, for the rule syntax")
		}
		rules = append(rules, rs...)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	key, err := LoadRedactKey(o)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, exitcode.New(exitcode.Usage, errors.New("redaction rules given but no redaction key"),
			"pass --redact-key FILE (a file holding at least 32 hex characters) or set "+EnvRedactKey)
	}
	return NewRedactor(rules, key)
}

// LoadRedactKey reads the redaction key of o (KeyFile, else KeyHex), with
// or without rules: nil, nil when neither is given. A key that is not hex
// or shorter than 16 bytes is a usage error naming where it came from.
func LoadRedactKey(o RedactOptions) ([]byte, error) {
	keyHex := o.KeyHex
	keySrc := EnvRedactKey
	if o.KeyFile != "" {
		data, err := os.ReadFile(o.KeyFile)
		if err != nil {
			return nil, exitcode.Input("read redaction key", err, "check the path given to --redact-key")
		}
		keyHex, keySrc = strings.TrimSpace(string(data)), o.KeyFile
	}
	if keyHex == "" {
		return nil, nil
	}
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("redaction key from %s is not hex: %w", keySrc, err), "generate one with: head -c 32 /dev/urandom | xxd -p -c 64")
	}
	if len(key) < 16 {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("redaction key from %s: redaction key has %d bytes; it needs at least 16", keySrc, len(key)), "")
	}
	return key, nil
}

// Info describes the redaction for the session header (never the key).
func (r *Redactor) Info() *eventlog.Redaction {
	if r == nil {
		return nil
	}
	texts := make([]string, len(r.rules))
	for i, ru := range r.rules {
		texts[i] = ru.Text
	}
	return &eventlog.Redaction{Rules: texts, KeyID: r.keyID, Alg: eventlog.RedactAlg}
}

// Token returns the keyed hash that replaces value (the UTF-8 of a string,
// or the canonical JSON of any other value).
func (r *Redactor) Token(value []byte) string {
	m := hmac.New(sha256.New, r.key)
	m.Write(value)
	return eventlog.RedactTokenPrefix + hex.EncodeToString(m.Sum(nil))
}

// payloadRoot is the member name under which an event payload is matched,
// so that "$.arguments.token" means the same in events and on the wire.
func payloadRoot(k eventlog.Kind) string {
	switch k {
	case eventlog.KindToolCall:
		return "arguments"
	case eventlog.KindToolResponse:
		return "result"
	case eventlog.KindModelInput, eventlog.KindModelOutput:
		return "content"
	case eventlog.KindExternalEffect:
		return "effect"
	case eventlog.KindNotification:
		return "params"
	case eventlog.KindMessage:
		return "message"
	case eventlog.KindMCPRequest:
		return "params"
	case eventlog.KindMCPResponse, eventlog.KindUserInput:
		return "result"
	}
	return "payload"
}

// payloadRootOf is payloadRoot for an event about to be written: the
// payload of an event read from the MCP wire other than a tool call or
// response is matched under its wire name (a request's "params", an
// answer's "result", or "error" for a JSON-RPC error), so that one rule
// covers the cassette line and the event.
func payloadRootOf(e *eventlog.Event) string {
	switch e.Kind {
	case eventlog.KindMCPRequest, eventlog.KindMCPResponse, eventlog.KindUserInput, eventlog.KindModelInput, eventlog.KindModelOutput:
		if e.Direction == "" {
			break // a reported model event: "content"
		}
		switch {
		case e.Kind == eventlog.KindMCPRequest || e.Kind == eventlog.KindModelInput:
			return "params"
		case e.RPCError:
			return "error"
		}
		return "result"
	}
	return payloadRoot(e.Kind)
}

// Payload redacts an event payload of the given kind. Paths are matched
// against {"<root>": payload}, root being arguments (tool_call), result
// (tool_response), content (model events), effect, params (notification) or
// message. It returns the payload unchanged (same bytes) when nothing matched.
func (r *Redactor) Payload(k eventlog.Kind, raw json.RawMessage) (json.RawMessage, bool, error) {
	return r.payload(payloadRoot(k), raw)
}

// payload redacts raw matched under {"<root>": raw}.
func (r *Redactor) payload(root string, raw json.RawMessage) (json.RawMessage, bool, error) {
	if r == nil || len(r.rules) == 0 || len(raw) == 0 {
		return raw, false, nil
	}
	v, err := jsontree.ParseWire(raw, "payload")
	if err != nil {
		return nil, false, fmt.Errorf("payload is not JSON: %w", err)
	}
	wrapper := &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{{Key: root, Val: v}}}
	changed, err := r.apply([]*jsontree.Value{wrapper})
	if err != nil || !changed {
		return raw, false, err
	}
	out, err := wrapper.Obj[0].Val.AppendCompact(nil)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// Value redacts a JSON value, paths matching from its root.
func (r *Redactor) Value(raw json.RawMessage) (json.RawMessage, bool, error) {
	if r == nil || len(r.rules) == 0 {
		return raw, false, nil
	}
	v, err := jsontree.ParseWire(raw, "value")
	if err != nil {
		return nil, false, fmt.Errorf("value is not JSON: %w", err)
	}
	changed, err := r.apply([]*jsontree.Value{v})
	if err != nil || !changed {
		return raw, false, err
	}
	out, err := v.AppendCompact(nil)
	return out, err == nil, err
}

// Line redacts one raw wire line (without its newline). A JSON line has
// paths matched from the message root and from its "params" (so that
// "$.arguments.token" matches a tools/call request), and regular expressions
// applied to its string values; it is re-encoded compactly, members in their
// order, only when something was redacted. A line that is not JSON has the
// regular expressions applied to its text. When changed is false, out is
// line itself: the bytes are untouched. Callers record that the line was
// redacted. A line nested deeper than jsonlimit.MaxDepth cannot be read
// for paths; when a path rule is given, the whole line is replaced by one
// token (a JSON string), so that no secret a path names reaches the disk.
func (r *Redactor) Line(line []byte) (out []byte, changed bool) {
	if r == nil || len(r.rules) == 0 {
		return line, false
	}
	v, err := jsontree.ParseWire(line, "line")
	var deep *jsonlimit.Error
	if err != nil && errors.As(err, &deep) && r.hasPath() {
		b, _ := canon.AppendString(nil, r.Token(line))
		return b, true
	}
	if err != nil {
		text := string(line)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		red, ch := r.redactString(text)
		if !ch {
			return line, false
		}
		return []byte(red), true
	}
	roots := []*jsontree.Value{v}
	if v.Kind == jsontree.Object {
		if p := v.Get("params"); p != nil && p.Kind == jsontree.Object {
			roots = append(roots, p)
		}
	}
	changed, err = r.apply(roots)
	if err != nil || !changed {
		return line, false
	}
	b, err := v.AppendCompact(nil)
	if err != nil {
		return line, false
	}
	return b, true
}

// apply runs every rule over the roots and reports whether anything changed.
func (r *Redactor) apply(roots []*jsontree.Value) (bool, error) {
	var matched []*jsontree.Value
	seen := map[*jsontree.Value]bool{}
	for _, ru := range r.rules {
		if ru.path == nil {
			continue
		}
		for _, root := range roots {
			for _, n := range root.Select(*ru.path) {
				if !seen[n] {
					seen[n] = true
					matched = append(matched, n)
				}
			}
		}
	}
	changed := false
	tokens := make([]string, len(matched))
	for i, n := range matched {
		if n.Kind == jsontree.String {
			if tokenRe.MatchString(n.Str) && len(n.Str) == len(eventlog.RedactTokenPrefix)+64 {
				tokens[i] = n.Str // already redacted
				continue
			}
			tokens[i] = r.Token([]byte(n.Str))
			continue
		}
		b, err := n.AppendCompact(nil)
		if err != nil {
			return false, err
		}
		c, err := canon.Transform(b)
		if err != nil {
			return false, err
		}
		tokens[i] = r.Token(c)
	}
	for i, n := range matched {
		if n.Kind == jsontree.String && n.Str == tokens[i] {
			continue
		}
		*n = jsontree.Value{Kind: jsontree.String, Str: tokens[i]}
		changed = true
	}
	if r.hasRegex() {
		for _, root := range roots {
			root.Walk(func(v *jsontree.Value) {
				if v.Kind != jsontree.String {
					return
				}
				if s, ch := r.redactString(v.Str); ch {
					v.Str, changed = s, true
				}
			})
		}
	}
	return changed, nil
}

func (r *Redactor) hasPath() bool {
	for _, ru := range r.rules {
		if ru.path != nil {
			return true
		}
	}
	return false
}

func (r *Redactor) hasRegex() bool {
	for _, ru := range r.rules {
		if ru.regex != nil {
			return true
		}
	}
	return false
}

// redactString replaces every match of the regular expressions in s,
// leaving existing redaction tokens alone.
func (r *Redactor) redactString(s string) (string, bool) {
	changed := false
	for _, ru := range r.rules {
		if ru.regex == nil {
			continue
		}
		var b strings.Builder
		last := 0
		ch := false
		protect := tokenRe.FindAllStringIndex(s, -1)
		protect = append(protect, []int{len(s), len(s)})
		for _, p := range protect {
			gap := s[last:p[0]]
			red := ru.regex.ReplaceAllStringFunc(gap, func(m string) string { return r.Token([]byte(m)) })
			if red != gap {
				ch = true
			}
			b.WriteString(red)
			b.WriteString(s[p[0]:p[1]])
			last = p[1]
		}
		if ch {
			s = b.String()
			changed = true
		}
	}
	return s, changed
}
