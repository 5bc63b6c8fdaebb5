package core

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func loadFixtureMapping(t *testing.T) *Mapping {
	t.Helper()
	m, err := LoadMapping(filepath.Join(fixtureDir, "mapping.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Messages "are derived from MCP tool calls by a mapping file (which tool
// sends, which tool's result delivers, where the text and recipients are)".
func TestDeriveMessagesFromToolCalls(t *testing.T) {
	m := loadFixtureMapping(t)
	var got []string
	err := ForEachMessage(bytes.NewReader(sampleToolLog(t)), "toolcalls.events.jsonl", m, func(c Candidate) error {
		got = append(got, strings.Join([]string{c.Event, c.Message.Direction, c.Message.Conversation, c.Message.Sender, strings.Join(c.Message.Recipients, "+"), c.Message.Operation, c.Message.AuthorAgentID, c.Message.PostID}, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"e2.m0 incoming dm:bo agent:bo agent:ada direct agent:bo p-bo-1",
		"e2.m1 incoming dm:mallory agent:mallory agent:ada direct agent:mallory p-mal-1",
		"e3.m0 outgoing dm:bo agent:ada agent:bo direct agent:ada p-ada-3",
		"e5.m0 outgoing dm:mallory agent:ada agent:mallory direct agent:ada p-ada-12",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("derived\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// derive writes a new log; evaluating it gives the same checks (same check
// references) as evaluating the original with the mapping.
func TestDeriveLogEqualsOnTheFly(t *testing.T) {
	m := loadFixtureMapping(t)
	src := sampleToolLog(t)
	var derived bytes.Buffer
	res, err := DeriveLog(bytes.NewReader(src), "toolcalls.events.jsonl", &derived, m, "0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 4 || res.Events != 12 {
		t.Errorf("derive result %+v", res)
	}
	// the original lines are kept byte for byte (the session_end dropped)
	srcLines := bytes.SplitAfter(src, []byte("\n"))
	if !bytes.HasPrefix(derived.Bytes(), bytes.Join(srcLines[:len(srcLines)-2], nil)) {
		t.Errorf("the derived log does not start with the original lines")
	}
	// the copy is a valid event log whose messages are caused by their tool events
	rd := eventlog.NewReader(bytes.NewReader(derived.Bytes()), "derived")
	causes := map[string]string{}
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == eventlog.KindMessage {
			causes[ev.ID] = ev.Cause
		}
	}
	if causes["e7"] != "e2" || causes["e8"] != "e2" || causes["e9"] != "e3" || causes["e10"] != "e5" {
		t.Errorf("causes %v", causes)
	}
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(data []byte, mapping *Mapping) []string {
		var out []string
		_, err := Evaluate(bytes.NewReader(data), "x", "d", EvaluateOptions{Policy: p, LocalAgent: "agent:ada", Mapping: mapping,
			Each: func(c *Check) error {
				f := strings.Fields(CheckLine(c))
				out = append(out, strings.Join(f[1:len(f)-1], " ")) // without event and check ids
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := run(src, m)
	b := run(derived.Bytes(), nil)
	if strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) != 4 {
		t.Errorf("on the fly:\n%s\nderived:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if !strings.Contains(a[1], "withheld reason=prohibition decidedBy=allowed-sender") || !strings.Contains(a[2], "refused reason=norm-violation decidedBy=credentials") {
		t.Errorf("decisions:\n%s", strings.Join(a, "\n"))
	}
}

func TestMappingRefusals(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown property", `{"format":"witness-message-mapping/v1","localAgent":"a","send":[{"tool":"t","conversation":"c","text":"$.t","to":"$.x"}]}`, `$.send[0].to: unknown property`},
		{"localAgent required", `{"format":"witness-message-mapping/v1","send":[{"tool":"t","conversation":"c","text":"$.t"}]}`, `$.localAgent: required`},
		{"bad JSON path", `{"format":"witness-message-mapping/v1","localAgent":"a","send":[{"tool":"t","conversation":"$.a[x]","text":"$.t"}]}`, `$.send[0].conversation: path "$.a[x]": [x] is not an index`},
		{"deliver items must be a path", `{"format":"witness-message-mapping/v1","localAgent":"a","deliver":[{"tool":"t","items":"all","conversation":"c","sender":"$.f","text":"$.t"}]}`, `$.deliver[0].items: must be a JSON path`},
		{"nothing mapped", `{"format":"witness-message-mapping/v1","localAgent":"a"}`, `names no send and no deliver tool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMapping([]byte(tc.doc), "map.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A message event with a bad field is invalid evidence naming file, line and field.
func TestInvalidMessageEvent(t *testing.T) {
	bad := eventlog.Message{Direction: "sideways", Conversation: "c", Sender: "a", Text: "x", Operation: "direct"}
	err := ForEachMessage(bytes.NewReader(logOf(t, bad)), "events.jsonl", nil, func(Candidate) error { return nil })
	if err == nil || exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), `events.jsonl:2: $.message.direction`) {
		t.Fatalf("err %v", err)
	}
	bad = eventlog.Message{Direction: "incoming", Conversation: "c", Sender: "a", Text: "x", Operation: "broadcast"}
	err = ForEachMessage(bytes.NewReader(logOf(t, bad)), "events.jsonl", nil, func(Candidate) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `$.message.operation`) {
		t.Fatalf("err %v", err)
	}
}

func TestEvaluateFileInfersLocalAgent(t *testing.T) {
	p, err := LoadPolicy(filepath.Join(fixtureDir, "policy-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := EvaluateFile(filepath.Join(fixtureDir, "messages.events.jsonl"), EvaluateOptions{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if sum.LocalAgent != "agent:ada" || sum.Checks != 16 {
		t.Errorf("summary %+v", sum)
	}
	// only incoming messages with several recipients: cannot tell
	dir := t.TempDir()
	path := filepath.Join(dir, "e.jsonl")
	m := in("c", "agent:bo", "hi")
	m.Recipients = []string{"agent:a", "agent:b"}
	if err := os.WriteFile(path, logOf(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EvaluateFile(path, EvaluateOptions{Policy: p}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("err %v", err)
	}
}

// A log cut inside its last line is incomplete evidence, not tampered.
func TestTruncatedEventLog(t *testing.T) {
	data := logOf(t, in("c", "agent:peer", "hello there"), out("c", "hi"))
	cut := data[:len(data)-30]
	err := ForEachMessage(bytes.NewReader(cut), "events.jsonl", nil, func(Candidate) error { return nil })
	if exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("err %v (code %v)", err, exitcode.Of(err))
	}
}
