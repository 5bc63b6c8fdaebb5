package flagmode

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func proxyLike() (*Set, *pflag.FlagSet) {
	s := New(
		Mode{Name: "stdio", Title: "a stdio server (-- CMD)", Enter: "drop --listen and give -- CMD"},
		Mode{Name: "listen", Title: "--listen (the HTTP proxy)", Enter: "add --listen and --upstream"},
		Mode{Name: "input", Title: "an HTTP cassette"},
	)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("out", "", "")
	fs.String("effects", "", "effects")
	fs.String("listen", "", "listen")
	fs.Int("max-conns", 1, "conns")
	fs.Bool("pace", false, "pace")
	s.Only(fs, "effects", "stdio")
	s.Only(fs, "listen", "listen", "input")
	s.Only(fs, "max-conns", "listen", "input")
	s.Only(fs, "pace", "input")
	return s, fs
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		args      []string
		mode      string
		err, hint string
	}{
		{[]string{"--out", "d"}, "stdio", "", ""},
		{[]string{"--out", "d", "--effects", "x"}, "stdio", "", ""},
		{[]string{"--effects", "x"}, "listen", "--effects is for a stdio server (-- CMD), not for --listen (the HTTP proxy)", "drop --effects, or drop --listen and give -- CMD"},
		{[]string{"--max-conns", "2"}, "stdio", "--max-conns is for --listen (the HTTP proxy) or an HTTP cassette, not for a stdio server (-- CMD)", "drop --max-conns, or add --listen and --upstream"},
		{[]string{"--pace"}, "listen", "--pace is for an HTTP cassette, not for --listen (the HTTP proxy)", "drop --pace"},
		// the first in the order declared, whatever the order given
		{[]string{"--pace", "--effects", "x"}, "listen", "--effects is for a stdio server (-- CMD), not for --listen (the HTTP proxy)", "drop --effects, or drop --listen and give -- CMD"},
		// a default is not a flag given
		{nil, "stdio", "", ""},
	} {
		s, fs := proxyLike()
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		e := s.Check(fs, c.mode)
		if c.err == "" {
			if e != nil {
				t.Errorf("%v in %s: %v", c.args, c.mode, e)
			}
			continue
		}
		if e == nil {
			t.Errorf("%v in %s: no error, want %q", c.args, c.mode, c.err)
			continue
		}
		if e.Error() != c.err || e.Hint() != c.hint {
			t.Errorf("%v in %s:\n got %q / %q\nwant %q / %q", c.args, c.mode, e.Error(), e.Hint(), c.err, c.hint)
		}
	}
}

func TestGroups(t *testing.T) {
	_, fs := proxyLike()
	got := Usage(fs)
	// in the order of fs (sorted), each combination of modes once
	want := "Flags:\n" +
		"      --out string   \n" +
		"\nFlags for a stdio server (-- CMD):\n" +
		"      --effects string   effects\n" +
		"\nFlags for --listen (the HTTP proxy) or an HTTP cassette:\n" +
		"      --listen string   listen\n" +
		"      --max-conns int   conns (default 1)\n" +
		"\nFlags for an HTTP cassette:\n" +
		"      --pace   pace\n"
	if got != want {
		t.Errorf("Usage:\n%s\nwant:\n%s", got, want)
	}
	if n := len(Groups(fs)); n != 4 {
		t.Errorf("%d groups, want 4", n)
	}
}

func TestProgrammingErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"mode twice":   func() { New(Mode{Name: "a"}, Mode{Name: "a"}) },
		"flag twice":   func() { s, fs := proxyLike(); s.Only(fs, "pace", "stdio") },
		"no flag":      func() { s, fs := proxyLike(); s.Only(fs, "nope", "stdio") },
		"no mode":      func() { s, fs := proxyLike(); s.Only(fs, "out") },
		"unknown mode": func() { s, fs := proxyLike(); s.Only(fs, "out", "b") },
		"check":        func() { New(Mode{Name: "a"}).Check(pflag.NewFlagSet("", pflag.ContinueOnError), "b") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "flagmode: ") {
					t.Errorf("%s: recovered %v, want a flagmode panic", name, r)
				}
			}()
			f()
		}()
	}
}

// The modes ride on the flags themselves, so a copy of the set (cobra's
// LocalFlags is one) is grouped alike.
func TestGroupsOfACopy(t *testing.T) {
	_, fs := proxyLike()
	cp := pflag.NewFlagSet("copy", pflag.ContinueOnError)
	fs.VisitAll(cp.AddFlag)
	if got, want := Usage(cp), Usage(fs); got != want {
		t.Errorf("copy:\n%s\nwant:\n%s", got, want)
	}
	if g := Groups(pflag.NewFlagSet("", pflag.ContinueOnError)); len(g) != 0 {
		t.Errorf("no flags: %d groups", len(g))
	}
}
