// Package junit writes JUnit XML in the shape of the Jenkins xunit plugin's
// junit-10.xsd: testsuites (name, tests, failures, errors; no skipped) holds
// testsuite elements (name, tests, failures, errors required; skipped
// allowed), each holding properties and testcase elements (name required,
// classname), each with at most a failure or a skipped element (message,
// type, text) and a system-out. The JUnit writers of package drift and
// package verify both write through it; internal/junitcheck checks the
// result.
package junit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// Suites is the root testsuites element.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one testsuite element.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Properties []Property `xml:"properties>property"`
	Cases      []Case     `xml:"testcase"`
}

// Property is one property of a testsuite.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one testcase element: with a Failure it failed, with Skipped it
// was skipped, with neither it passed.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *Message `xml:"failure,omitempty"`
	Skipped   *Message `xml:"skipped,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Message is a failure or skipped element: its message and type attributes
// and its text.
type Message struct {
	Message string
	Type    string
	Text    string
	// NoType leaves the type attribute out; otherwise it is written, empty
	// or not.
	NoType bool
	// EscapeNewlines writes the newlines of Text as &#xA;, as a chardata
	// field of encoding/xml does; otherwise they stay newlines, so a diff
	// in the text reads as a diff in the raw file too.
	EscapeNewlines bool
}

// MarshalXML writes the element with the message attribute, the type
// attribute unless NoType, and Text as character data. Characters XML
// cannot carry become U+FFFD, as in every text encoding/xml writes.
func (m Message) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Attr = append(start.Attr, xml.Attr{Name: xml.Name{Local: "message"}, Value: m.Message})
	if !m.NoType {
		start.Attr = append(start.Attr, xml.Attr{Name: xml.Name{Local: "type"}, Value: m.Type})
	}
	if m.EscapeNewlines {
		return e.EncodeElement(struct {
			Text string `xml:",chardata"`
		}{m.Text}, start)
	}
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	if m.Text != "" {
		if err := e.EncodeToken(xml.CharData(m.Text)); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// Write writes doc to w: the XML header, the document indented by two
// spaces, and a newline.
func Write(w io.Writer, doc Suites) error {
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	var out bytes.Buffer
	out.WriteString(xml.Header)
	out.Write(b)
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}
