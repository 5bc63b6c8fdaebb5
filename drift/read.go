package drift

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Report is a drift report as read back.
type Report struct {
	File    string // the name it was read under
	Header  Header
	Entries []Entry
	// End is the end record; nil when the report was cut short (serve was
	// killed, or its report could not be written to the end).
	End *End
	// Cut says why End is nil, in words ("" when there is an end).
	Cut string
}

// ReadFile reads the report at path.
func ReadFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read report", err, "name a file written by 'witness serve --report'")
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a report (name is used in messages). A file that is not a
// drift report at all is a usage error (exit 2) whose hint names what it
// is when it can tell; a report that breaks the format is invalid
// evidence (exit 3); an I/O error is exit 5. A report cut short (no end
// record, a last line without its newline, an empty file) is not an
// error: Report.End is nil and Report.Cut says why.
func Read(r io.Reader, name string) (*Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	rep := &Report{File: name}
	var lineNo int64
	for {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			var long *lineTooLong
			if errors.As(err, &long) {
				return nil, invalid(&jsontree.Error{File: name, Line: lineNo + 1, Msg: fmt.Sprintf("a line longer than %d bytes", maxLine)})
			}
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read report %s: %w", name, err), "")
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		lineNo++
		if !bytes.HasSuffix(line, []byte("\n")) {
			// the writer hands a record and its newline over in one
			// write: a line without one was cut by a kill
			if lineNo == 1 {
				rep.Cut = "its first line is cut off: serve did not stop cleanly"
				return rep, nil
			}
			if rep.End == nil {
				rep.Cut = fmt.Sprintf("its line %d is cut off and there is no end record: serve did not stop cleanly (killed?)", lineNo)
				return rep, nil
			}
			return nil, invalid(&jsontree.Error{File: name, Line: lineNo, Msg: "a line after the end record"})
		}
		line = line[:len(line)-1]
		if lineNo == 1 {
			if err := rep.header(line); err != nil {
				return nil, err
			}
			continue
		}
		if rep.End != nil {
			return nil, invalid(&jsontree.Error{File: name, Line: lineNo, Msg: "a line after the end record"})
		}
		if err := rep.record(line, lineNo); err != nil {
			return nil, err
		}
	}
	switch {
	case lineNo == 0:
		rep.Cut = "it is empty: serve did not stop cleanly (or never started)"
	case rep.End == nil:
		rep.Cut = "it has no end record: serve did not stop cleanly (killed?)"
	}
	return rep, nil
}

func invalid(err error) error {
	return exitcode.New(exitcode.Tampered, err, "the report was changed or is not one 'witness serve --report' wrote: run the replay again")
}

// header reads the first line.
func (rep *Report) header(line []byte) error {
	name := rep.File
	notReport := func(what string) error {
		hint := "witness drift reads the reports 'witness serve --report FILE' writes"
		switch what {
		case "witness-cassette":
			hint = "this is a cassette: give it to 'witness serve --cassette', and the --report that serve writes to 'witness drift'"
		case "":
		default:
			hint = fmt.Sprintf("this is a %q file, not a drift report: %s", what, hint)
		}
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s is not a drift report", name), hint)
	}
	v, err := jsontree.Parse(line, name)
	if err != nil || v.Kind != jsontree.Object {
		return notReport("")
	}
	f := v.Get("format")
	if f == nil || f.Kind != jsontree.String {
		if v.Get("seq") != nil && v.Get("kind") != nil {
			return exitcode.New(exitcode.Usage, fmt.Errorf("%s is not a drift report", name), "this is an event log: 'witness verify --events' reads it; witness drift reads the reports 'witness serve --report FILE' writes")
		}
		return notReport("")
	}
	if f.Str != format {
		return notReport(f.Str)
	}
	var perr error
	o := jsontree.NewObjectReader(name, "", v, &perr)
	o.String("format", true)
	if ver := o.Int("v", true); perr == nil && ver != version {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s: drift report version %d, this witness reads version %d", name, ver, version), "use the witness that wrote it")
	}
	h := &rep.Header
	h.Format, h.V = format, version
	if c := o.Object("cassette", true); c != nil {
		h.Cassette.Name = c.String("name", true)
		h.Cassette.SHA256 = c.String("sha256", false)
		c.Done()
	}
	if s := o.Object("serve", true); s != nil {
		h.Serve.Transport = s.String("transport", true)
		h.Serve.Address = s.String("address", false)
		h.Serve.RequireAll = s.Bool("require_all", true)
		h.Serve.AllowRedacted = s.Bool("allow_redacted", true)
		h.Serve.AnswerTimeout = s.String("answer_timeout", true)
		s.Done()
	}
	h.Requests = int(o.Int("requests", true))
	o.Done()
	if perr == nil && h.Requests < 0 {
		o.Fail("requests", "negative")
	}
	if perr != nil {
		return invalid(perr)
	}
	return nil
}

// record reads one line after the header.
func (rep *Report) record(line []byte, lineNo int64) error {
	name := rep.File
	v, err := jsontree.Parse(line, name)
	if err != nil {
		var je *jsontree.Error
		if errors.As(err, &je) {
			je.Locate(name, lineNo)
		}
		return invalid(err)
	}
	var perr error
	o := jsontree.NewObjectReader(name, "", v, &perr)
	kind := o.String("record", true)
	switch {
	case perr != nil:
	case kind == "entry":
		e := readEntry(o)
		if perr == nil && e.N != len(rep.Entries)+1 {
			o.Fail("n", fmt.Sprintf("entry %d where %d was due: a line is missing or out of order", e.N, len(rep.Entries)+1))
		}
		rep.Entries = append(rep.Entries, e)
	case kind == "end":
		e := readEnd(o)
		if perr == nil {
			var c Counts
			for _, x := range rep.Entries {
				c.add(x.Status)
			}
			switch {
			case e.Entries != len(rep.Entries):
				o.Fail("entries", fmt.Sprintf("%d entries announced, %d in the report", e.Entries, len(rep.Entries)))
			case e.Counts != c:
				o.Fail("counts", fmt.Sprintf("the counts (%s) are not those of the entries (%s)", e.Counts, c))
			}
		}
		rep.End = &e
	default:
		o.Fail("record", fmt.Sprintf("unknown record %q (want entry or end)", kind))
	}
	o.Done()
	if perr != nil {
		if je, ok := perr.(*jsontree.Error); ok {
			je.Locate(name, lineNo)
		}
		return invalid(perr)
	}
	return nil
}

func readEntry(o *jsontree.ObjectReader) Entry {
	var e Entry
	e.N = int(o.Int("n", true))
	e.Status = Status(o.String("status", true))
	if !oneOf(e.Status, statuses) && o.Has("status") {
		o.Fail("status", fmt.Sprintf("unknown status %q", e.Status))
	}
	e.Kind = Kind(o.String("kind", true))
	if !oneOf(e.Kind, []Kind{KindRequest, KindAnswer, KindLine}) && o.Has("kind") {
		o.Fail("kind", fmt.Sprintf("unknown kind %q", e.Kind))
	}
	e.Recorded = readMessage(o, "recorded")
	e.Incoming = readMessage(o, "incoming")
	e.Turn = readMessage(o, "turn")
	e.Nearest = readMessage(o, "nearest")
	e.ID = o.String("id", false)
	e.Reason = o.String("reason", false)
	e.RecordedAnswer = o.String("recorded_answer", false)
	e.HostAnswer = o.String("host_answer", false)
	e.Diff = o.String("diff", false)
	switch {
	case e.Status == Missed && e.Incoming == nil:
		o.Fail("incoming", "missing (a missed entry names what the host sent)")
	case e.Status != Missed && e.Kind != KindLine && e.Recorded == nil:
		o.Fail("recorded", "missing (a "+string(e.Status)+" entry names the recording)")
	case e.Kind == KindLine && e.Status != Missed:
		o.Fail("status", "a line entry is always missed")
	case e.Status != Matched && e.Reason == "":
		o.Fail("reason", "missing (an entry that is not matched says why)")
	}
	return e
}

func readMessage(o *jsontree.ObjectReader, key string) *Message {
	r := o.Object(key, false)
	if r == nil {
		return nil
	}
	m := &Message{
		Line:         r.Int("line", false),
		Method:       r.String("method", false),
		Tool:         r.String("tool", false),
		Prompt:       r.String("prompt", false),
		URI:          r.String("uri", false),
		ParamsSHA256: r.String("params_sha256", false),
		Preview:      r.String("preview", false),
	}
	if m.Line < 0 {
		r.Fail("line", "negative")
	}
	r.Done()
	return m
}

func readEnd(o *jsontree.ObjectReader) End {
	var e End
	e.Stop = Stop(o.String("stop", true))
	if !oneOf(e.Stop, stops) && o.Has("stop") {
		o.Fail("stop", fmt.Sprintf("unknown stop %q", e.Stop))
	}
	e.Signal = o.String("signal", false)
	e.Error = o.String("error", false)
	e.Entries = int(o.Int("entries", true))
	if c := o.Object("counts", true); c != nil {
		e.Counts.Matched = int(c.Int("matched", true))
		e.Counts.Missed = int(c.Int("missed", true))
		e.Counts.NeverAsked = int(c.Int("never_asked", true))
		e.Counts.AnswerDiffered = int(c.Int("answer_differed", true))
		c.Done()
	}
	return e
}

func oneOf[T ~string](v T, set []T) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// lineTooLong is a line over MaxLine.
type lineTooLong struct{}

func (*lineTooLong) Error() string { return "line too long" }

// readLine returns the next line with its newline (without one at the end
// of the input), refusing lines over MaxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > maxLine+1 {
			return nil, &lineTooLong{}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

// describe names a message in words: method and tool, prompt or uri.
func (m *Message) describe() string {
	if m == nil {
		return ""
	}
	s := m.Method
	switch {
	case m.Tool != "":
		s += " " + m.Tool
	case m.Prompt != "":
		s += " " + m.Prompt
	case m.URI != "":
		s += " " + m.URI
	}
	if s == "" {
		s = "a line"
	}
	return strings.TrimSpace(s)
}

// where is describe with the cassette line, when there is one.
func (m *Message) where() string {
	s := m.describe()
	if m != nil && m.Line > 0 {
		s += fmt.Sprintf(" (cassette line %d)", m.Line)
	}
	return s
}
