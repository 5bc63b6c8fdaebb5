package drift

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/junitcheck"
)

// sample writes a report with one entry of each status and kind, with
// hostile bytes in previews and diffs, ending as end says (nil: no end).
func sample(t testing.TB, end *End) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{Cassette: Cassette{Name: "rec/echo cassette.jsonl", SHA256: strings.Repeat("ab", 32)},
		Serve: ServeOptions{Transport: "stdio", AnswerTimeout: "1m0s"}, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	hostile := "<&>\"]]>\x01\x00\xff\u2028" + strings.Repeat("é", 100)
	entries := []Entry{
		{Status: Matched, Kind: KindRequest, Recorded: Describe("tools/call", `{"arguments":{"text":"hi"},"name":"echo"}`, 7), ID: "1"},
		{Status: Missed, Kind: KindRequest, Incoming: Describe("tools/call", `{"arguments":{"text":"`+hostile+`"},"name":"echo"}`, 0), ID: `"x"`,
			Reason: "no recorded answer for this request", Nearest: Describe("tools/call", `{"arguments":{"text":"hi"},"name":"echo"}`, 7),
			Diff: "- \"text\": \"hi\"\n+ \"text\": \"" + hostile + "\""},
		{Status: NeverAsked, Kind: KindRequest, Recorded: Describe("resources/read", `{"uri":"file:///a b"}`, 9), Reason: "recorded, and never asked for in this run"},
		{Status: AnswerDiffered, Kind: KindAnswer, Recorded: Describe("elicitation/create", `{"message":"Your name?"}`, 5),
			Turn: Describe("tools/call", `{"name":"greet"}`, 4), ID: "0", Reason: "differs", RecordedAnswer: `result {"name":"Ada"}`,
			HostAnswer: `result {"name":"Mallory"}`, Diff: "-  \"name\": \"Ada\"\n+  \"name\": \"Mallory\""},
		{Status: Missed, Kind: KindLine, Incoming: DescribeLine([]byte("not json \xff")), Reason: "not a JSON-RPC message"},
	}
	for _, e := range entries {
		if err := w.Entry(e); err != nil {
			t.Fatal(err)
		}
	}
	if end != nil {
		if err := w.Close(*end); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestWriteRead(t *testing.T) {
	data := sample(t, &End{Stop: StopSignal, Signal: "SIGTERM"})
	r, err := Read(bytes.NewReader(data), "r.jsonl")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if r.End == nil || r.End.Stop != StopSignal || r.End.Entries != 5 || r.End.Counts != (Counts{Matched: 1, Missed: 2, NeverAsked: 1, AnswerDiffered: 1}) {
		t.Fatalf("end %+v", r.End)
	}
	if len(r.Entries) != 5 || r.Entries[0].Recorded.Tool != "echo" || r.Entries[2].Recorded.URI != "file:///a b" || r.Entries[3].Turn.Tool != "greet" {
		t.Fatalf("entries %+v", r.Entries)
	}
	if p := r.Entries[1].Incoming.Preview; len(p) > MaxPreview+40 || !strings.Contains(p, "more bytes)") {
		t.Errorf("preview not cut: %q", p)
	}
	// deterministic: the same entries give the same bytes
	if again := sample(t, &End{Stop: StopSignal, Signal: "SIGTERM"}); !bytes.Equal(again, data) {
		t.Error("two writes of the same report differ")
	}
}

func TestCutReports(t *testing.T) {
	full := sample(t, nil)
	lines := bytes.SplitAfter(full, []byte("\n"))
	for name, data := range map[string][]byte{
		"no end":           full,
		"empty":            nil,
		"cut header":       lines[0][:10],
		"cut in an entry":  append(append([]byte{}, bytes.Join(lines[:3], nil)...), lines[3][:20]...),
		"header alone":     lines[0],
		"cut after header": append(append([]byte{}, lines[0]...), `{"record":"en`...),
	} {
		r, err := Read(bytes.NewReader(data), "r.jsonl")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.End != nil || r.Cut == "" {
			t.Errorf("%s: end %+v, cut %q", name, r.End, r.Cut)
		}
		v := Judge([]*Report{r}, Options{AllowUnused: true})
		if !v.Drift || v.Reports[0].Cases[0].Type != "incomplete_report" {
			t.Errorf("%s: an incomplete report is no drift: %+v", name, v.Reports[0].Cases[0])
		}
	}
}

func TestInvalidReports(t *testing.T) {
	good := string(sample(t, &End{Stop: StopEOF}))
	header := good[:strings.Index(good, "\n")+1]
	for _, c := range []struct {
		name, data string
		code       exitcode.Code
		msg        string
	}{
		{"cassette", `{"format":"witness-cassette","v":1}` + "\n", exitcode.Usage, "is not a drift report"},
		{"events", `{"seq":0,"kind":"session_start"}` + "\n", exitcode.Usage, "is not a drift report"},
		{"garbage", "hello\n", exitcode.Usage, "is not a drift report"},
		{"version", `{"format":"witness-drift-report","v":2}` + "\n", exitcode.Usage, "version 2"},
		{"unknown header field", strings.Replace(header, `"requests":3`, `"requests":3,"x":1`, 1), exitcode.Tampered, "r.jsonl:1:"},
		{"count changed", strings.Replace(good, `"never_asked":1,`, `"never_asked":0,`, 1), exitcode.Tampered, "$.counts"},
		{"entry dropped", strings.Replace(good, `{"record":"entry","n":2,`, `{"record":"entry","n":3,`, 1), exitcode.Tampered, "$.n: entry 3 where 2 was due"},
		{"after end", good + `{"record":"end","stop":"eof","entries":5,"counts":{"matched":1,"missed":2,"never_asked":1,"answer_differed":1}}` + "\n", exitcode.Tampered, "after the end record"},
		{"unknown status", strings.Replace(good, `"status":"matched"`, `"status":"fine"`, 1), exitcode.Tampered, `unknown status "fine"`},
		{"bad json", header + "{\n", exitcode.Tampered, "r.jsonl:2:"},
		{"deep", header + strings.Repeat("[", 300) + "\n", exitcode.Tampered, "nesting deeper than 256"},
		{"missed without incoming", header + `{"record":"entry","n":1,"status":"missed","kind":"request","reason":"x"}` + "\n", exitcode.Tampered, "$.incoming: missing"},
	} {
		_, err := Read(strings.NewReader(c.data), "r.jsonl")
		if exitcode.Of(err) != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v (code %v), want code %v and %q", c.name, err, exitcode.Of(err), c.code, c.msg)
		}
	}
}

func TestJudge(t *testing.T) {
	r, err := Read(bytes.NewReader(sample(t, &End{Stop: StopEOF})), "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	outcomes := func(o Options) string {
		var s []string
		for _, c := range Judge([]*Report{r}, o).Reports[0].Cases {
			s = append(s, string(c.Outcome))
		}
		return strings.Join(s, ",")
	}
	if got := outcomes(Options{}); got != "pass,pass,fail,fail,fail,fail" {
		t.Errorf("outcomes %s", got)
	}
	if got := outcomes(Options{AllowUnused: true}); got != "pass,pass,fail,skipped,fail,fail" {
		t.Errorf("outcomes with AllowUnused %s", got)
	}
	// a report with only matched entries, and one with never_asked allowed
	clean := &Report{File: "c", End: &End{Stop: StopEOF}, Entries: []Entry{{N: 1, Status: Matched, Kind: KindRequest, Recorded: &Message{Method: "ping"}}}}
	unused := &Report{File: "u", End: &End{Stop: StopEOF}, Entries: []Entry{{N: 1, Status: NeverAsked, Kind: KindRequest, Recorded: &Message{Method: "ping"}, Reason: "x"}}}
	if Judge([]*Report{clean}, Options{}).Drift || !Judge([]*Report{clean, unused}, Options{}).Drift || Judge([]*Report{clean, unused}, Options{AllowUnused: true}).Drift {
		t.Error("wrong verdicts over merged reports")
	}
	failed := &Report{File: "f", End: &End{Stop: StopFailed, Error: "read cassette"}}
	if !Judge([]*Report{failed}, Options{AllowUnused: true}).Drift {
		t.Error("a serve that could not start is no drift")
	}
}

func TestJUnitIsJUnit10(t *testing.T) {
	r1, err := Read(bytes.NewReader(sample(t, &End{Stop: StopEOF})), "a b&<c>.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Read(bytes.NewReader(sample(t, nil)), "cut.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {AllowUnused: true}} {
		var b bytes.Buffer
		if err := Judge([]*Report{r1, r2}, o).WriteJUnit(&b); err != nil {
			t.Fatal(err)
		}
		if err := junitcheck.Check(b.Bytes()); err != nil {
			t.Fatalf("AllowUnused %v: %v\n%s", o.AllowUnused, err, b.Bytes())
		}
		// the diff reads as a diff: newlines kept in the failure text
		if !strings.Contains(b.String(), "\n+  &#34;name&#34;: &#34;Mallory&#34;</failure>") {
			t.Errorf("the diff is not in the failure text:\n%s", b.String())
		}
		if o.AllowUnused && !strings.Contains(b.String(), `skipped="1"`) {
			t.Errorf("never_asked is not skipped with AllowUnused")
		}
	}
}

func TestWriterStopsAtFirstError(t *testing.T) {
	w, err := NewWriter(failAfter{n: 1}, Header{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Entry(Entry{Status: Matched, Kind: KindRequest, Recorded: &Message{Method: "ping"}}); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if w.Close(End{Stop: StopEOF}) == nil || w.Err() == nil {
		t.Fatal("the error did not stick")
	}
}

type failAfter struct{ n int }

func (f failAfter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"format"`)) {
		return len(p), nil
	}
	return 0, io.ErrShortWrite
}

func TestCut(t *testing.T) {
	if got := Cut("héllo", 2); got != "h … (5 more bytes)" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("ok\xff", 10); got != "ok\uFFFD" {
		t.Errorf("Cut of invalid UTF-8 = %q", got)
	}
}

// FuzzRead: the report reader never panics, and what it accepts judges and
// writes as JUnit that keeps the junit-10 rules.
func FuzzRead(f *testing.F) {
	f.Add(sample(f, &End{Stop: StopEOF}))
	f.Add(sample(f, nil))
	f.Add([]byte(`{"format":"witness-drift-report","v":1}` + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Read(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if c := exitcode.Of(err); c != exitcode.Usage && c != exitcode.Tampered {
				t.Fatalf("code %v for %v", c, err)
			}
			return
		}
		var b bytes.Buffer
		v := Judge([]*Report{r}, Options{})
		if err := v.WriteJUnit(&b); err != nil {
			t.Fatal(err)
		}
		if err := junitcheck.Check(b.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, b.Bytes())
		}
		if err := v.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

// Sessions writing through Sub writers share one numbering and one end:
// a Sub's Close writes nothing, and its later entries are refused.
func TestSubWriters(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{Cassette: Cassette{Name: "c.jsonl"}, Serve: ServeOptions{Transport: "http", Address: "127.0.0.1:1", AnswerTimeout: "0s"}, Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	one, two := w.Sub(), w.Sub()
	rec := Describe("tools/list", "", 3)
	one.Entry(Entry{Status: Matched, Kind: KindRequest, Recorded: rec})
	two.Entry(Entry{Status: NeverAsked, Kind: KindRequest, Recorded: rec, Reason: "never asked"})
	if err := one.Close(End{Stop: StopEOF}); err != nil {
		t.Fatal(err)
	}
	if err := one.Entry(Entry{Status: Matched, Kind: KindRequest, Recorded: rec}); err == nil {
		t.Error("an entry after a Sub's Close was accepted")
	}
	two.Entry(Entry{Status: Matched, Kind: KindRequest, Recorded: rec})
	w.Close(End{Stop: StopExitAfter})
	r, err := Read(bytes.NewReader(b.Bytes()), "r.jsonl")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if r.End == nil || r.End.Stop != StopExitAfter || r.End.Entries != 3 || r.End.Counts != (Counts{Matched: 2, NeverAsked: 1}) {
		t.Fatalf("end %+v\n%s", r.End, b.String())
	}
}
