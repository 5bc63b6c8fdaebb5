package jsonlimit

import (
	"bytes"
	"testing"
)

// refChecker is the byte-by-byte Checker the fast one replaced, kept as
// the reference it must equal: same state after every piece, same error
// at the same position.
type refChecker struct {
	depth    int
	inString bool
	escape   bool
	line     int
	col      int
}

func (c *refChecker) write(p []byte) error {
	if c.line == 0 {
		c.line = 1
	}
	for _, b := range p {
		c.col++
		if c.inString {
			switch {
			case c.escape:
				c.escape = false
			case b == '\\':
				c.escape = true
			case b == '"':
				c.inString = false
			case b == '\n':
				c.line++
				c.col = 0
			}
			continue
		}
		switch b {
		case '"':
			c.inString = true
		case '[', '{':
			c.depth++
			if c.depth > MaxDepth {
				return &Error{Line: c.line, Col: c.col, Depth: c.depth}
			}
		case ']', '}':
			if c.depth > 0 {
				c.depth--
			}
		case '\n':
			c.line++
			c.col = 0
		}
	}
	return nil
}

// sameAsReference feeds data to both checkers in pieces of size step and
// fails on the first difference of error or state.
func sameAsReference(t *testing.T, data []byte, step int) {
	t.Helper()
	var c Checker
	var r refChecker
	for i := 0; i < len(data); i += step {
		piece := data[i:min(i+step, len(data))]
		err, rerr := c.Write(piece), r.write(piece)
		if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() || err != nil && *err.(*Error) != *rerr.(*Error) {
			t.Fatalf("step %d at %d: error %v, reference %v", step, i, err, rerr)
		}
		if err != nil {
			return
		}
		got := refChecker(c)
		if got != r {
			t.Fatalf("step %d at %d: state %+v, reference %+v", step, i, got, r)
		}
	}
}

func TestCheckerEqualsReference(t *testing.T) {
	docs := [][]byte{
		[]byte(`{"a":"b\"c\\","d":["e\n\nf",{"g":"\\\\\"\n"}],"h":"[{"}`),
		[]byte("\"line\nfeed\\\nescaped\"\n[\n\"x\ny\"]"),
		append(bytes.Repeat([]byte(`{"k":"\"v\\\n",`), MaxDepth+3), '"'),
		append(bytes.Repeat([]byte("[\"\\\"\""), MaxDepth), '['),
		append([]byte("\"unterminated "), bytes.Repeat([]byte(`\n\\\"`), 1000)...),
		[]byte(`"\`),
	}
	for _, d := range docs {
		for _, step := range []int{1, 2, 3, 7, 64, len(d)} {
			sameAsReference(t, d, step)
		}
	}
}

func FuzzCheckerEqualsReference(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"]\"\\"}]}`), uint8(3))
	f.Add([]byte("\"a\nb\\\nc\"[[\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		sameAsReference(t, data, int(step)+1)
		sameAsReference(t, data, len(data)+1)
	})
}
