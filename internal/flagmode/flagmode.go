// Package flagmode holds the flags of a command that runs in modes (witness
// proxy: a stdio server behind `-- CMD`, or the HTTP proxy of --listen;
// witness serve: an MCP cassette on stdio or over --listen, an HTTP
// cassette): each flag is declared once with the modes it belongs to, one
// check refuses a flag given in a mode it does not belong to, with one
// message and hint whatever the command, and the help groups the flags by
// mode (docs/design/thin-cmd.md).
package flagmode

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Mode is one way a command runs.
type Mode struct {
	// Name is what the command calls the mode (Only, Check).
	Name string
	// Title is what the error and the help say: "--listen (the HTTP proxy)".
	Title string
	// Enter tells how to run in this mode, for the hint: "add --listen
	// and --upstream"; "" when the user cannot choose it (it follows from
	// an input, say).
	Enter string
}

// Set is the modes of one command and the flags that belong to some of
// them only; a flag it was not told of belongs to every mode.
type Set struct {
	modes []Mode
	order []string            // flags told of, in the order declared
	of    map[string][]string // flag -> the names of its modes
}

// New returns the set of the modes given, in the order the help lists
// them. Two modes of one name are a programming error (panic).
func New(modes ...Mode) *Set {
	s := &Set{of: map[string][]string{}}
	for _, m := range modes {
		if _, ok := s.mode(m.Name); ok {
			panic("flagmode: mode " + m.Name + " given twice")
		}
		s.modes = append(s.modes, m)
	}
	return s
}

func (s *Set) mode(name string) (Mode, bool) {
	for _, m := range s.modes {
		if m.Name == name {
			return m, true
		}
	}
	return Mode{}, false
}

// Only declares that flag belongs to the modes named, and to no other. A
// flag declared twice, or with no mode or an unknown one, is a
// programming error (panic).
func (s *Set) Only(flag string, modes ...string) {
	if _, ok := s.of[flag]; ok {
		panic("flagmode: --" + flag + " declared twice")
	}
	if len(modes) == 0 {
		panic("flagmode: --" + flag + " declared with no mode")
	}
	for _, m := range modes {
		if _, ok := s.mode(m); !ok {
			panic("flagmode: --" + flag + ": unknown mode " + m)
		}
	}
	s.of[flag] = append([]string(nil), modes...)
	s.order = append(s.order, flag)
}

// belongs says whether flag may be given in mode.
func (s *Set) belongs(flag, mode string) bool {
	ms, ok := s.of[flag]
	if !ok {
		return true
	}
	for _, m := range ms {
		if m == mode {
			return true
		}
	}
	return false
}

// Error is a flag given in a mode it does not belong to.
type Error struct {
	Flag string // without the dashes
	Mode Mode   // the mode the command runs in
	For  []Mode // the modes the flag belongs to
}

// Error is "--FLAG is for TITLE, not for TITLE".
func (e *Error) Error() string {
	return fmt.Sprintf("--%s is for %s, not for %s", e.Flag, titles(e.For), e.Mode.Title)
}

// Hint is "drop --FLAG", and how to run in the flag's modes where the
// user can choose it.
func (e *Error) Hint() string {
	h := "drop --" + e.Flag
	var enter []string
	for _, m := range e.For {
		if m.Enter != "" {
			enter = append(enter, m.Enter)
		}
	}
	if len(enter) > 0 {
		h += ", or " + strings.Join(enter, ", or ")
	}
	return h
}

func titles(ms []Mode) string {
	t := make([]string, len(ms))
	for i, m := range ms {
		t[i] = m.Title
	}
	return strings.Join(t, " or ")
}

// Check refuses the first flag (in the order declared) given on fs that
// does not belong to mode, and returns nil when there is none. An unknown
// mode is a programming error (panic).
func (s *Set) Check(fs *pflag.FlagSet, mode string) *Error {
	m, ok := s.mode(mode)
	if !ok {
		panic("flagmode: unknown mode " + mode)
	}
	for _, f := range s.order {
		if fl := fs.Lookup(f); fl == nil || !fl.Changed || s.belongs(f, mode) {
			continue
		}
		e := &Error{Flag: f, Mode: m}
		for _, name := range s.of[f] {
			fm, _ := s.mode(name)
			e.For = append(e.For, fm)
		}
		return e
	}
	return nil
}

// Group is the flags of one line of the help: Title "" for the flags of
// every mode.
type Group struct {
	Title string
	Flags *pflag.FlagSet
}

// Groups splits the flags of fs for the help: first those of every mode,
// then, for each combination of modes in the order the flags were
// declared, the flags that belong to just those modes. Empty groups are
// left out.
func (s *Set) Groups(fs *pflag.FlagSet) []Group {
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	all.SortFlags = fs.SortFlags
	var groups []Group
	index := map[string]int{}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := s.of[f.Name]; !ok {
			all.AddFlag(f)
		}
	})
	for _, name := range s.order {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		var ms []Mode
		for _, n := range s.of[name] {
			m, _ := s.mode(n)
			ms = append(ms, m)
		}
		t := titles(ms)
		i, ok := index[t]
		if !ok {
			g := pflag.NewFlagSet("", pflag.ContinueOnError)
			g.SortFlags = fs.SortFlags
			groups = append(groups, Group{Title: t, Flags: g})
			i = len(groups) - 1
			index[t] = i
		}
		groups[i].Flags.AddFlag(f)
	}
	if all.HasFlags() {
		groups = append([]Group{{Flags: all}}, groups...)
	}
	return groups
}

// Usage is the help's flag lines, grouped (Groups): the flags of every
// mode under "Flags:", then each group under "Flags for TITLE:".
func (s *Set) Usage(fs *pflag.FlagSet) string {
	var b strings.Builder
	for i, g := range s.Groups(fs) {
		if i > 0 {
			b.WriteString("\n")
		}
		if g.Title == "" {
			b.WriteString("Flags:\n")
		} else {
			fmt.Fprintf(&b, "Flags for %s:\n", g.Title)
		}
		b.WriteString(g.Flags.FlagUsages())
	}
	return b.String()
}
