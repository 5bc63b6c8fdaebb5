// Package junitcheck checks JUnit XML against the rules of the Jenkins
// xunit plugin's junit-10.xsd, the schema most CI readers follow. It is a
// structural checker (no XSD engine ships with Go): the elements, their
// attributes and children, SUREFIRE_TIME, and counts that add up. The
// JUnit writers of package drift and package verify are tested with it.
package junitcheck

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Check checks doc against the rules of the Jenkins xunit plugin's
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
func Check(doc []byte) error {
	root, err := parse(doc)
	if err != nil {
		return err
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
	var sum tally
	for _, s := range root.kids {
		t, err := suite(s)
		if err != nil {
			return err
		}
		sum.add(t)
	}
	if count(root, "tests") != sum.tests || count(root, "failures") != sum.failures || count(root, "errors") != sum.errors {
		return fmt.Errorf("testsuites counts tests=%s failures=%s errors=%s, its suites %d, %d, %d",
			root.attrs["tests"], root.attrs["failures"], root.attrs["errors"], sum.tests, sum.failures, sum.errors)
	}
	return nil
}

// node is one element of the document.
type node struct {
	name  string
	attrs map[string]string
	kids  []*node
	text  string
}

// tally counts testcases by outcome.
type tally struct{ tests, failures, errors, skipped int }

func (t *tally) add(o tally) {
	t.tests, t.failures, t.errors, t.skipped = t.tests+o.tests, t.failures+o.failures, t.errors+o.errors, t.skipped+o.skipped
}

// parse reads doc into a tree of elements: no namespaces, one root.
func parse(doc []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != "" {
				return nil, fmt.Errorf("element %s in a namespace", t.Name.Local)
			}
			n := &node{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			switch {
			case len(stack) > 0:
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			case root != nil:
				return nil, fmt.Errorf("two root elements")
			default:
				root = n
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
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

var surefire = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)

// attrs checks that n has every required attribute and no other than the
// optional ones, and that a time attribute is a SUREFIRE_TIME.
func attrs(n *node, required, optional string) error {
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

// kids checks that n holds only the allowed children, and no text when
// it may hold no children.
func kids(n *node, allowed string) error {
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

func count(n *node, attr string) int {
	var v int
	fmt.Sscan(n.attrs[attr], &v)
	return v
}

// suite checks a testsuite and its nested suites, and returns its counts.
func suite(s *node) (tally, error) {
	if err := attrs(s, "name tests failures errors", "group time skipped timestamp hostname id package file log url"); err != nil {
		return tally{}, err
	}
	if err := kids(s, "testsuite properties testcase system-out system-err"); err != nil {
		return tally{}, err
	}
	var sum tally
	skipped := 0 // this suite's own testcases; nested suites count theirs
	for _, k := range s.kids {
		var t tally
		var err error
		switch k.name {
		case "testsuite":
			t, err = suite(k)
			t.skipped = 0
		case "properties":
			err = properties(k)
		case "testcase":
			t, err = testcase(k)
			skipped += t.skipped
		}
		if err != nil {
			return tally{}, err
		}
		sum.add(t)
	}
	if count(s, "tests") != sum.tests || count(s, "failures") != sum.failures || count(s, "errors") != sum.errors {
		return tally{}, fmt.Errorf("testsuite %q counts tests=%s failures=%s errors=%s, its testcases %d, %d, %d",
			s.attrs["name"], s.attrs["tests"], s.attrs["failures"], s.attrs["errors"], sum.tests, sum.failures, sum.errors)
	}
	if v, ok := s.attrs["skipped"]; ok && count(s, "skipped") != skipped {
		return tally{}, fmt.Errorf("testsuite %q counts skipped=%s, its testcases %d", s.attrs["name"], v, skipped)
	}
	return sum, nil
}

// properties checks a properties element: property children with a name
// and a value.
func properties(k *node) error {
	if err := kids(k, "property"); err != nil {
		return err
	}
	for _, p := range k.kids {
		if err := attrs(p, "name value", ""); err != nil {
			return err
		}
	}
	return nil
}

// testcase checks a testcase and counts it with its outcome.
func testcase(k *node) (tally, error) {
	if err := attrs(k, "name", "time classname group"); err != nil {
		return tally{}, err
	}
	if err := kids(k, "skipped error failure rerunFailure rerunError flakyFailure flakyError system-out system-err"); err != nil {
		return tally{}, err
	}
	t := tally{tests: 1}
	for _, r := range k.kids {
		switch r.name {
		case "failure", "error", "skipped":
			if err := attrs(r, "", "type message"); err != nil {
				return tally{}, err
			}
		}
		switch r.name {
		case "failure":
			t.failures++
		case "error":
			t.errors++
		case "skipped":
			t.skipped++
		}
	}
	return t, nil
}
