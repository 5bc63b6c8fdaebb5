package drift

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
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

// checkJUnit10 checks doc against the rules of the Jenkins xunit plugin's
// junit-10.xsd: the root is testsuites, with only the attributes name,
// time, tests, failures, errors and only testsuite children; a testsuite
// must have name, tests, failures and errors, may have only the schema's
// other attributes, and holds testsuite, properties, testcase, system-out
// and system-err; a property has name and value; a testcase must have a
// name, may have time, classname and group, and holds only skipped, error,
// failure, rerun and flaky elements, system-out and system-err; failure,
// error and skipped have only type and message. A time attribute matches
// SUREFIRE_TIME. The counts must also add up (the schema does not say so,
// but every reader relies on it).
func checkJUnit10(doc []byte) error {
	type node struct {
		name  string
		attrs map[string]string
		kids  []*node
		text  string
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attrs: map[string]string{}}
			if t.Name.Space != "" {
				return fmt.Errorf("element %s in a namespace", t.Name.Local)
			}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				if root != nil {
					return fmt.Errorf("two root elements")
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return fmt.Errorf("no root element")
	}
	surefire := regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)
	attrs := func(n *node, required, optional string) error {
		allowed := map[string]bool{}
		for _, a := range strings.Fields(required + " " + optional) {
			allowed[a] = true
		}
		for _, a := range strings.Fields(required) {
			if _, ok := n.attrs[a]; !ok {
				return fmt.Errorf("<%s> lacks the required attribute %s", n.name, a)
			}
		}
		for a, v := range n.attrs {
			if !allowed[a] {
				return fmt.Errorf("<%s> has the attribute %s, which junit-10.xsd does not allow", n.name, a)
			}
			if a == "time" && !surefire.MatchString(v) {
				return fmt.Errorf("<%s time=%q> is not a SUREFIRE_TIME", n.name, v)
			}
		}
		return nil
	}
	kids := func(n *node, allowed string) error {
		ok := map[string]bool{}
		for _, k := range strings.Fields(allowed) {
			ok[k] = true
		}
		for _, k := range n.kids {
			if !ok[k.name] {
				return fmt.Errorf("<%s> holds <%s>, which junit-10.xsd does not allow there", n.name, k.name)
			}
		}
		if allowed == "" && strings.TrimSpace(n.text) != "" {
			return fmt.Errorf("<%s> holds text", n.name)
		}
		return nil
	}
	count := func(n *node, attr string) int {
		var v int
		fmt.Sscan(n.attrs[attr], &v)
		return v
	}
	var suite func(s *node) (tests, failures, errors int, err error)
	suite = func(s *node) (tests, failures, errors int, err error) {
		if err := attrs(s, "name tests failures errors", "group time skipped timestamp hostname id package file log url"); err != nil {
			return 0, 0, 0, err
		}
		if err := kids(s, "testsuite properties testcase system-out system-err"); err != nil {
			return 0, 0, 0, err
		}
		skipped := 0
		for _, k := range s.kids {
			switch k.name {
			case "testsuite":
				t, f, e, err := suite(k)
				if err != nil {
					return 0, 0, 0, err
				}
				tests, failures, errors = tests+t, failures+f, errors+e
			case "properties":
				if err := kids(k, "property"); err != nil {
					return 0, 0, 0, err
				}
				for _, p := range k.kids {
					if err := attrs(p, "name value", ""); err != nil {
						return 0, 0, 0, err
					}
				}
			case "testcase":
				if err := attrs(k, "name", "time classname group"); err != nil {
					return 0, 0, 0, err
				}
				if err := kids(k, "skipped error failure rerunFailure rerunError flakyFailure flakyError system-out system-err"); err != nil {
					return 0, 0, 0, err
				}
				tests++
				for _, r := range k.kids {
					switch r.name {
					case "failure", "error", "skipped":
						if err := attrs(r, "", "type message"); err != nil {
							return 0, 0, 0, err
						}
						switch r.name {
						case "failure":
							failures++
						case "error":
							errors++
						default:
							skipped++
						}
					}
				}
			}
		}
		if count(s, "tests") != tests || count(s, "failures") != failures || count(s, "errors") != errors {
			return 0, 0, 0, fmt.Errorf("testsuite %q counts tests=%s failures=%s errors=%s, its testcases %d, %d, %d",
				s.attrs["name"], s.attrs["tests"], s.attrs["failures"], s.attrs["errors"], tests, failures, errors)
		}
		if v, ok := s.attrs["skipped"]; ok && count(s, "skipped") != skipped {
			return 0, 0, 0, fmt.Errorf("testsuite %q counts skipped=%s, its testcases %d", s.attrs["name"], v, skipped)
		}
		return tests, failures, errors, nil
	}
	if root.name != "testsuites" {
		return fmt.Errorf("the root is <%s>, want <testsuites>", root.name)
	}
	if err := attrs(root, "", "name time tests failures errors"); err != nil {
		return err
	}
	if err := kids(root, "testsuite"); err != nil {
		return err
	}
	tests, failures, errors := 0, 0, 0
	for _, s := range root.kids {
		t, f, e, err := suite(s)
		if err != nil {
			return err
		}
		tests, failures, errors = tests+t, failures+f, errors+e
	}
	if count(root, "tests") != tests || count(root, "failures") != failures || count(root, "errors") != errors {
		return fmt.Errorf("testsuites counts tests=%s failures=%s errors=%s, its suites %d, %d, %d", root.attrs["tests"], root.attrs["failures"], root.attrs["errors"], tests, failures, errors)
	}
	return nil
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
		if err := checkJUnit10(b.Bytes()); err != nil {
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

// The checker itself: each rule it claims fails a document that breaks it.
func TestCheckJUnit10Fails(t *testing.T) {
	ok := `<testsuites tests="1" failures="1" errors="0"><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="c"><failure message="m" type="t">x</failure></testcase></testsuite></testsuites>`
	if err := checkJUnit10([]byte(ok)); err != nil {
		t.Fatalf("a valid document fails: %v", err)
	}
	for name, bad := range map[string]string{
		"skipped on testsuites": strings.Replace(ok, `<testsuites tests="1"`, `<testsuites skipped="0" tests="1"`, 1),
		"suite lacks errors":    strings.Replace(ok, `failures="1" errors="0"><testcase`, `failures="1"><testcase`, 1),
		"case lacks name":       strings.Replace(ok, `<testcase name="c">`, `<testcase>`, 1),
		"unknown case attr":     strings.Replace(ok, `<testcase name="c">`, `<testcase name="c" status="x">`, 1),
		"bad time":              strings.Replace(ok, `<testsuites tests="1"`, `<testsuites time="1s" tests="1"`, 1),
		"wrong root":            strings.Replace(strings.Replace(ok, "<testsuites ", "<results ", 1), "</testsuites>", "</results>", 1),
		"counts off":            strings.Replace(ok, `<testsuites tests="1" failures="1"`, `<testsuites tests="1" failures="0"`, 1),
		"case in testsuites":    strings.Replace(ok, `</testsuite></testsuites>`, `</testsuite><testcase name="x"/></testsuites>`, 1),
		"unknown failure attr":  strings.Replace(ok, `<failure message="m"`, `<failure line="3" message="m"`, 1),
	} {
		if err := checkJUnit10([]byte(bad)); err == nil {
			t.Errorf("%s: the checker accepts it", name)
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
		if err := checkJUnit10(b.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, b.Bytes())
		}
		if err := v.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
