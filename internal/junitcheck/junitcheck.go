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
