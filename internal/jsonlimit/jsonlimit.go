// Package jsonlimit holds the one nesting limit that every JSON reader of
// witness enforces, and a linear-time check of it that runs before any
// decoder touches the bytes.
//
// Every reader (seal, spec, keyring, trust file, scenario, effects, mapping,
// policy, audit, events, cassette, graph, JSON-RPC lines) calls Check, or
// Checker for a stream, so that a file nested a million levels deep is
// refused after one pass over its bytes, in bounded memory, with the line
// and column where the limit was crossed.
package jsonlimit

import (
	"bytes"
	"fmt"
)

// MaxDepth is the deepest nesting of arrays and objects any witness reader
// accepts. MCP messages, seals and events nest a few levels; 256 leaves
// room for real tool arguments while keeping every recursive walker safe.
const MaxDepth = 256

// MaxWireDepth is the deepest wire message (a JSON-RPC line, an HTTP body)
// that is embedded as JSON in an event. Events wrap a payload a few levels
// deep, so a deeper wire message is kept as its exact text instead and
// marked, and the event that carries it still reads back under MaxDepth.
const MaxWireDepth = MaxDepth - 32

// Error reports where the nesting limit was crossed. Line and Col are
// 1-based; Col counts bytes. File, when set (see In), names the file and
// Line is then a line of that file.
type Error struct {
	File      string
	Line, Col int
	Depth     int
}

func (e *Error) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d:%d: nesting deeper than %d levels", e.File, e.Line, e.Col, MaxDepth)
	}
	return fmt.Sprintf("%d:%d: nesting deeper than %d levels", e.Line, e.Col, MaxDepth)
}

// In returns a copy of e placed in file, for a document that begins on
// line first of it (1 for a whole file, N for line N of a JSON-lines file).
func (e *Error) In(file string, first int64) *Error {
	c := *e
	c.File = file
	c.Line += int(first) - 1
	return &c
}

// CheckIn is Check for a document that begins on line first of file: the
// *Error it returns names the file and the file's line.
func CheckIn(data []byte, file string, first int64) error {
	if err := Check(data); err != nil {
		return err.(*Error).In(file, first)
	}
	return nil
}

// Check scans data once and returns an *Error when arrays and objects nest
// deeper than MaxDepth. It does not validate JSON otherwise: brackets inside
// strings are skipped, everything else is left to the decoder.
func Check(data []byte) error {
	var c Checker
	return c.Write(data)
}

// Checker is Check for data that arrives in pieces (a stream, a line read
// in chunks). The zero value is ready; Write may be called repeatedly.
type Checker struct {
	depth    int
	inString bool
	escape   bool
	line     int // 0 means 1
	col      int
}

// Reset makes the checker ready for a new document.
func (c *Checker) Reset() { *c = Checker{} }

// Write scans the next piece of the document. Only the bytes between
// strings are looked at one by one: the body of a string is skipped with
// bytes.IndexByte to its closing quote, and the escapes are found the same
// way (each search starts past the last one found, so a string of escapes
// stays linear). Line and column advance as if every byte were counted (a
// line feed starts a line, except an escaped one in a string), but they
// are counted over whole runs of bytes with bytes.Count: at the end of p,
// at an escaped line feed, and where the limit is crossed.
func (c *Checker) Write(p []byte) error {
	if c.line == 0 {
		c.line = 1
	}
	from := 0           // p[from:i] is not yet in line and col
	qAt, bsAt := -1, -1 // the next '"' and '\\' in p at or after i when >= i
	for i := 0; i < len(p); {
		if c.inString {
			if c.escape {
				c.escape = false
				if p[i] == '\n' { // not a new line: count it as a column
					c.advance(p[from:i])
					c.col++
					from = i + 1
				}
				i++
				continue
			}
			if qAt < i {
				qAt = len(p)
				if q := bytes.IndexByte(p[i:], '"'); q >= 0 {
					qAt = i + q
				}
			}
			if bsAt < i {
				bsAt = len(p)
				if b := bytes.IndexByte(p[i:], '\\'); b >= 0 {
					bsAt = i + b
				}
			}
			switch {
			case bsAt < qAt:
				c.escape = true
				i = bsAt + 1
			case qAt < len(p):
				c.inString = false
				i = qAt + 1
			default:
				i = len(p)
			}
			continue
		}
		switch p[i] {
		case '"':
			c.inString = true
		case '[', '{':
			c.depth++
			if c.depth > MaxDepth {
				c.advance(p[from : i+1])
				return &Error{Line: c.line, Col: c.col, Depth: c.depth}
			}
		case ']', '}':
			if c.depth > 0 {
				c.depth--
			}
		}
		i++
	}
	c.advance(p[from:])
	return nil
}

// advance moves the position over s, in which every line feed starts a
// line.
func (c *Checker) advance(s []byte) {
	if n := bytes.Count(s, []byte{'\n'}); n > 0 {
		c.line += n
		c.col = len(s) - bytes.LastIndexByte(s, '\n') - 1
		return
	}
	c.col += len(s)
}
