package derive

import (
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"strings"
	"testing"
)

var redactKey = bytes.Repeat([]byte{0x42}, 32)

func testRedactor(t testing.TB, rules ...string) *Redactor {
	t.Helper()
	var rs []RedactRule
	for _, s := range rules {
		r, err := ParseRedactRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	r, err := NewRedactor(rs, redactKey)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const secret = "sk-SECRETsecret123"

func TestRedactPaths(t *testing.T) {
	r := testRedactor(t, "$.arguments.token", "$..password", "$.arguments.list[1]", "$.arguments.obj[*].k")
	in := json.RawMessage(`{"token":"` + secret + `","keep":"ok","nested":{"password":{"a":1}},"list":["a","` + secret + `"],"obj":[{"k":1},{"k":"v"}]}`)
	out, changed, err := r.Payload(eventlog.KindToolCall, in)
	must(t, err)
	if !changed || bytes.Contains(out, []byte(secret)) {
		t.Fatalf("%s", out)
	}
	var v map[string]any
	must(t, json.Unmarshal(out, &v))
	tok := v["token"].(string)
	if tok != r.Token([]byte(secret)) || !strings.HasPrefix(tok, eventlog.RedactTokenPrefix) {
		t.Fatalf("token %q", tok)
	}
	// identical values give identical tokens, wherever they are
	if v["list"].([]any)[1] != tok {
		t.Fatal("same secret, different token")
	}
	if v["keep"] != "ok" {
		t.Fatal("unmatched value changed")
	}
	// a non-string value is hashed as canonical JSON
	if v["nested"].(map[string]any)["password"] != r.Token([]byte(`{"a":1}`)) {
		t.Fatalf("%v", v["nested"])
	}
	// the path root depends on the kind: a result is not "arguments"
	_, changed, err = r.Payload(eventlog.KindToolResponse, json.RawMessage(`{"token":"x"}`))
	must(t, err)
	if changed {
		t.Fatal("$.arguments matched a tool_response")
	}
	// nothing matched: same bytes
	same := json.RawMessage(`{ "b":1, "a":2 }`)
	out, changed, err = r.Payload(eventlog.KindToolCall, same)
	must(t, err)
	if changed || string(out) != string(same) {
		t.Fatalf("untouched payload changed: %s", out)
	}
	// idempotent
	once, _, _ := r.Payload(eventlog.KindToolCall, in)
	twice, ch2, _ := r.Payload(eventlog.KindToolCall, once)
	if ch2 || !bytes.Equal(once, twice) {
		t.Fatalf("second pass changed: %s", twice)
	}
}

func TestRedactRegexAndLines(t *testing.T) {
	r := testRedactor(t, `re:sk-[A-Za-z0-9]+`, "$.arguments.token")
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"token":"abc","note":"key ` + secret + ` here"}}}`)
	out, changed := r.Line(line)
	if !changed || bytes.Contains(out, []byte(secret)) || bytes.Contains(out, []byte(`"abc"`)) {
		t.Fatalf("%s", out)
	}
	// order of members kept
	if !bytes.HasPrefix(out, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"token":"redacted:hmac-sha256:`)) {
		t.Fatalf("order changed: %s", out)
	}
	if !bytes.Contains(out, []byte(`"note":"key `+r.Token([]byte(secret))+` here"`)) {
		t.Fatalf("regex: %s", out)
	}
	// untouched lines keep their exact bytes
	plain := []byte(`{"jsonrpc":"2.0", "id":8,"result":{}}`)
	if o, ch := r.Line(plain); ch || &o[0] != &plain[0] {
		t.Fatal("untouched line copied or changed")
	}
	// a non-JSON line (a banner) has the regex applied to its text
	o, ch := r.Line([]byte("server ready, key " + secret))
	if !ch || bytes.Contains(o, []byte(secret)) {
		t.Fatalf("%s", o)
	}
	// idempotent on tokens
	again, ch := r.Line(out)
	if ch || !bytes.Equal(again, out) {
		t.Fatalf("second pass: %s", again)
	}
}

func TestRedactRulesParse(t *testing.T) {
	good := "# comment\n\n$.a.b\n$..password\n$['odd key'][0]\nre:(?i)bearer [a-z0-9]+\n$.a[*]\n"
	rs, err := parseRedactRules([]byte(good), "rules.txt")
	must(t, err)
	if len(rs) != 5 {
		t.Fatalf("%d rules", len(rs))
	}
	for _, c := range []struct{ in, want string }{
		{"$.a\nfoo\n", "rules.txt:2: rule \"foo\" is neither"},
		{"re:(\n", "rules.txt:1: regular expression"},
		{"re:a*\n", "matches the empty string"},
		{"$\n", "selects the whole value"},
		{"$.a[x]\n", "not an index"},
		{"$.a..\n", "ends after a dot"},
		{"$.a[0\n", "unclosed"},
		{"$a\n", "unexpected"},
	} {
		_, err := parseRedactRules([]byte(c.in), "rules.txt")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	if _, err := NewRedactor(nil, []byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

// The secret never reaches the log: redaction happens in the Recorder before
// anything is written.
func TestRecorderRedactsBeforeWriting(t *testing.T) {
	r := testRedactor(t, "$.arguments.token", `re:sk-[A-Za-z0-9]+`)
	var buf bytes.Buffer
	w, err := eventlog.StartLog(&buf, &eventlog.Header{Redaction: r.Info()}, frozenTS, "")
	must(t, err)
	rec := NewRecorder(w, RecorderOptions{Clock: func() string { return frozenTS }, Redactor: r})
	_, err = rec.ModelInput(ModelInputEvent{Content: "use key " + secret})
	must(t, err)
	id, err := rec.ToolCall(ToolCallEvent{Tool: "login", Arguments: map[string]any{"token": secret}, RPCID: json.RawMessage(`"a"`)})
	must(t, err)
	_, err = rec.ToolResponse(ToolResponseEvent{RPCID: json.RawMessage(`"a"`), Result: map[string]any{"echo": secret}})
	must(t, err)
	must(t, eventlog.Finish(w, nil, frozenTS))
	if bytes.Contains(buf.Bytes(), []byte(secret)) || bytes.Contains(buf.Bytes(), []byte("SECRET")) {
		t.Fatalf("secret on disk:\n%s", buf.Bytes())
	}
	if n := bytes.Count(buf.Bytes(), []byte(r.Token([]byte(secret)))); n != 3 {
		t.Fatalf("token appears %d times, want 3:\n%s", n, buf.Bytes())
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"call":"`+id+`"`)) {
		t.Fatal("response not paired")
	}
	if bytes.Contains(buf.Bytes(), redactKey) {
		t.Fatal("key on disk")
	}
	if _, err := eventlog.VerifyLog(bytes.NewReader(buf.Bytes()), "x", eventlog.VerifyLogOptions{AllowUnsigned: true}); err != nil {
		t.Fatal(err)
	}
}

func FuzzRedactRules(f *testing.F) {
	f.Add("$.a.b\n$..password\nre:sk-[a-z]+\n", `{"a":{"b":"x"},"password":1,"s":"sk-abc"}`)
	f.Add("$['k'][0]\n$.a[*]\n# c\n", `{"k":["v"],"a":[1,2]}`)
	f.Add("re:(\n", "not json sk-a")
	f.Fuzz(func(t *testing.T, rules, value string) {
		rs, err := parseRedactRules([]byte(rules), "fuzz")
		if err != nil {
			return
		}
		r, err := NewRedactor(rs, redactKey)
		if err != nil {
			t.Fatal(err)
		}
		out, changed := r.Line([]byte(value))
		if !changed && string(out) != value {
			t.Fatal("unchanged line with different bytes")
		}
		if changed && json.Valid([]byte(value)) && !json.Valid(out) {
			t.Fatalf("redacted JSON line is not JSON: %s", out)
		}
		if changed && bytes.Contains(out, []byte("\n")) && !bytes.Contains([]byte(value), []byte("\n")) {
			t.Fatalf("redaction added a newline: %q", out)
		}
	})
}

// A repeated member name is redacted in every copy, and a line too deep to
// read for paths is replaced whole (no secret a path names reaches disk).
func TestRedactRepeatedAndDeepLines(t *testing.T) {
	r := testRedactor(t, "$..token")
	out, changed := r.Line([]byte(`{"params":{"token":"a","x":1,"token":"b"}}`))
	if !changed || bytes.Contains(out, []byte(`"a"`)) || bytes.Contains(out, []byte(`"b"`)) || bytes.Count(out, []byte(`"token"`)) != 2 {
		t.Fatalf("%s", out)
	}
	deep := []byte(strings.Repeat(`{"a":`, jsonlimit.MaxDepth+1) + `{"token":"` + secret + `"}` + strings.Repeat("}", jsonlimit.MaxDepth+1))
	out, changed = r.Line(deep)
	if !changed || bytes.Contains(out, []byte(secret)) || string(out) != `"`+r.Token(deep)+`"` {
		t.Fatalf("deep line: %.80s", out)
	}
	// with regular expressions only, a deep line keeps its bytes unless one matches
	re := testRedactor(t, `re:nomatch[0-9]+`)
	if out, changed := re.Line(deep); changed || !bytes.Equal(out, deep) {
		t.Fatal("deep line changed without a match")
	}
}
