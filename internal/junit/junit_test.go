package junit

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/internal/junitcheck"
)

func TestWrite(t *testing.T) {
	doc := Suites{Name: "n", Tests: 5, Failures: 2, Suites: []Suite{{
		Name: "s", Tests: 5, Failures: 2, Skipped: 2,
		Properties: []Property{{Name: "p", Value: "<&\">"}},
		Cases: []Case{
			{Name: "pass", Classname: "c"},
			{Name: "raw", Classname: "c", Failure: &Message{Message: "m", Type: "t", Text: "a\nb <&>\x01"}},
			{Name: "escaped", Classname: "c", Failure: &Message{Message: "m", Type: "t", Text: "a\nb\n", EscapeNewlines: true}, SystemOut: "o\n"},
			{Name: "untyped", Classname: "c", Skipped: &Message{Message: "why", NoType: true}},
			{Name: "empty type", Classname: "c", Skipped: &Message{Message: "why"}},
		},
	}}}
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="5" failures="2" errors="0">
  <testsuite name="s" tests="5" failures="2" errors="0" skipped="2">
    <properties>
      <property name="p" value="&lt;&amp;&#34;&gt;"></property>
    </properties>
    <testcase name="pass" classname="c"></testcase>
    <testcase name="raw" classname="c">
      <failure message="m" type="t">a
b &lt;&amp;&gt;` + "\uFFFD" + `</failure>
    </testcase>
    <testcase name="escaped" classname="c">
      <failure message="m" type="t">a&#xA;b&#xA;</failure>
      <system-out>o&#xA;</system-out>
    </testcase>
    <testcase name="untyped" classname="c">
      <skipped message="why"></skipped>
    </testcase>
    <testcase name="empty type" classname="c">
      <skipped message="why" type=""></skipped>
    </testcase>
  </testsuite>
</testsuites>
`
	if got := b.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestWriteChecks: what Write writes passes junitcheck when the counts add up.
func TestWriteChecks(t *testing.T) {
	doc := Suites{Name: "n", Tests: 2, Failures: 1, Suites: []Suite{{
		Name: "s", Tests: 2, Failures: 1,
		Cases: []Case{
			{Name: "a", Classname: "c"},
			{Name: "b", Classname: "c", Failure: &Message{Message: "m", Type: "t", Text: "x\ny"}},
		},
	}}}
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	if err := junitcheck.Check(b.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, b.Bytes())
	}
}
