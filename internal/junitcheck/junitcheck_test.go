package junitcheck

import (
	"strings"
	"testing"
)

// The checker itself: each rule it claims fails a document that breaks it.
func TestCheckFails(t *testing.T) {
	ok := `<testsuites tests="1" failures="1" errors="0"><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="c"><failure message="m" type="t">x</failure></testcase></testsuite></testsuites>`
	if err := Check([]byte(ok)); err != nil {
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
		if err := Check([]byte(bad)); err == nil {
			t.Errorf("%s: the checker accepts it", name)
		}
	}
}
