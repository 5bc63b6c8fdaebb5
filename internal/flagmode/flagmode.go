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

// Only declares that the flag of fs named flag belongs to the modes named,
// and to no other (the help says so: Groups). A flag not in fs, declared
// twice, or with no mode or an unknown one, is a programming error
// (panic).
func (s *Set) Only(fs *pflag.FlagSet, flag string, modes ...string) {
	f := fs.Lookup(flag)
	if f == nil {
		panic("flagmode: --" + flag + " is not a flag of the set")
	}
	if _, ok := s.of[flag]; ok {
		panic("flagmode: --" + flag + " declared twice")
	}
	if len(modes) == 0 {
		panic("flagmode: --" + flag + " declared with no mode")
	}
	var titles []string
	for _, name := range modes {
		m, ok := s.mode(name)
		if !ok {
			panic("flagmode: --" + flag + ": unknown mode " + name)
		}
		titles = append(titles, m.Title)
	}
	if err := fs.SetAnnotation(flag, annotation, titles); err != nil {
		panic("flagmode: " + err.Error())
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

// annotation is the key of the pflag annotation that carries the titles
// of a flag's modes, for the help (Groups reads it from any copy of the
// flag set, cobra's LocalFlags included).
const annotation = "flagmode"

// Group is the flags of one part of the help: Title "" for the flags of
// every mode, else the titles of the group's modes.
type Group struct {
	Title string
	Flags *pflag.FlagSet
}

// Groups splits the flags of fs for the help: first those of every mode,
// then, in the order fs lists them, one group for each combination of
// modes that flags belong to (as Only declared it). Empty groups are left
// out.
func Groups(fs *pflag.FlagSet) []Group {
	groups := []Group{{}}
	index := map[string]int{"": 0}
	fs.VisitAll(func(f *pflag.Flag) {
		t := strings.Join(f.Annotations[annotation], " or ")
		i, ok := index[t]
		if !ok {
			groups = append(groups, Group{Title: t})
			i = len(groups) - 1
			index[t] = i
		}
		if groups[i].Flags == nil {
			groups[i].Flags = pflag.NewFlagSet("", pflag.ContinueOnError)
			groups[i].Flags.SortFlags = fs.SortFlags
		}
		groups[i].Flags.AddFlag(f)
	})
	if groups[0].Flags == nil {
		groups = groups[1:]
	}
	return groups
}

// Usage is the help's flag lines, grouped (Groups): the flags of every
// mode under "Flags:", then each group under "Flags for TITLE:".
func Usage(fs *pflag.FlagSet) string {
	var b strings.Builder
	for i, g := range Groups(fs) {
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
