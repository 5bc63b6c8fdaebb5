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

// Write scans the next piece of the document. The body of a string is
// skipped with bytes.IndexByte to its closing quote or next escape (found
// once per string, so a string of escapes stays linear); only the bytes
// between strings are looked at one by one. Line and column advance as if
// every byte were counted: a line feed in a string starts a line, an
// escaped one does not.
func (c *Checker) Write(p []byte) error {
	if c.line == 0 {
		c.line = 1
	}
	qAt := -1 // the next '"' in p at or after i when >= i
	for i := 0; i < len(p); {
		if c.inString {
			if c.escape {
				c.escape = false
				c.col++
				i++
				continue
			}
			if qAt < i {
				qAt = len(p)
				if q := bytes.IndexByte(p[i:], '"'); q >= 0 {
					qAt = i + q
				}
			}
			stop := qAt
			if bs := bytes.IndexByte(p[i:qAt], '\\'); bs >= 0 {
				stop = i + bs
			}
			c.skip(p[i:stop])
			if stop == len(p) {
				return nil
			}
			c.col++
			if p[stop] == '\\' {
				c.escape = true
			} else {
				c.inString = false
			}
			i = stop + 1
			continue
		}
		b := p[i]
		i++
		c.col++
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

// skip advances the position over s, the inside of a string.
func (c *Checker) skip(s []byte) {
	if n := bytes.Count(s, []byte{'\n'}); n > 0 {
		c.line += n
		c.col = len(s) - bytes.LastIndexByte(s, '\n') - 1
		return
	}
	c.col += len(s)
}
