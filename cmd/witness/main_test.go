package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestMain lets testscript scripts run the witness binary in-process: the
// test binary re-executes itself as "witness" for every `exec witness ...`.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"witness": func() {
			silenceKlog() // as main does
			a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
			a.ownProcess = true // a process of its own, as main
			os.Exit(run(os.Args[1:], a))
		},
	})
}

// TestScript runs every cmd/witness/testdata/script/*.txtar. Scripts see:
//
//	$REPO            the repository root (e.g. $REPO/testdata/compat/atw-0.1.0/)
//	$ATW_WITNESS_TS  frozen to 2026-08-30T14:33:00+00:00
//	$WITNESS_KEYRING $WORK/keys.json (a fresh, not yet existing keyring)
//	$CI              passed through, so scripts can tell CI from a laptop
//	$HOME            $WORK/home
//
// The witness command runs in-process via TestMain.
func TestScript(t *testing.T) {
	root := testrepo.Root(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			env.Setenv("ATW_WITNESS_TS", "2026-08-30T14:33:00+00:00")
			env.Setenv("WITNESS_KEYRING", filepath.Join(env.WorkDir, "keys.json"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, "home", ".config"))
			env.Setenv("CI", os.Getenv("CI"))
			if p := os.Getenv("PATH"); p != "" {
				env.Setenv("PATH", p)
			}
			for _, k := range []string{"DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "GOCOVERDIR"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":         cmdExits,
			"replace":       cmdReplace,
			"cmp-no-eol":    cmdCmpNoEOL,
			"envfrom":       cmdEnvFrom,
			"build-fixture": cmdBuildFixture,
			"hostile-log":   cmdHostileLog,
			"docblock":      cmdDocBlock,
		},
		Condition:           scriptCondition,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// cmdExits implements the script command
//
//	exits CODE PROGRAM [ARGS...]
//
// which runs PROGRAM like exec and fails unless it exits with exactly CODE
// (see internal/exitcode: 0 ok, 1 violation, 2 usage, 3 tampered,
// 4 incomplete, 5 failure). Its stdout and stderr are then checked with the
// usual stdout/stderr commands.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...] (no '!': the code says what is expected)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdReplace implements the script command
//
//	replace FILE OLD NEW
//
// which replaces the first occurrence of OLD in FILE by NEW (Go escapes
// such as \n and \t are honoured in OLD and NEW; a double quote is
// literal) and fails when OLD is not there. Scripts use it to tamper
// with evidence one byte at a time.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	unq := func(s string) string {
		if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`); err == nil {
			return u
		}
		return s
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	old, repl := unq(args[1]), unq(args[2])
	if !strings.Contains(string(data), old) {
		ts.Fatalf("replace: %q not found in %s", old, args[0])
	}
	st, err := os.Stat(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, []byte(strings.Replace(string(data), old, repl, 1)), st.Mode().Perm()))
}

// cmdCmpNoEOL implements the script command
//
//	cmp-no-eol FILE WANT
//
// which checks that FILE does not end with a newline and equals WANT
// without WANT's final newline (txtar always ends a file with one). Seal,
// graph and replay files are written without a trailing newline, as 0.1.0
// writes them.
func cmdCmpNoEOL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cmp-no-eol FILE WANT")
	}
	got, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	if strings.HasSuffix(string(got), "\n") {
		ts.Fatalf("%s ends with a newline", args[0])
	}
	if string(got) != strings.TrimSuffix(string(want), "\n") {
		ts.Fatalf("%s differs from %s:\n%s", args[0], args[1], got)
	}
}

// cmdEnvFrom implements the script command
//
//	envfrom NAME FILE REGEXP
//
// which sets the environment variable NAME to the first submatch of REGEXP
// in FILE (use `cp stdout FILE` first to capture a command's output), for
// values such as generated key ids that a script cannot know in advance.
func cmdEnvFrom(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: envfrom NAME FILE REGEXP")
	}
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	m := re.FindSubmatch(data)
	if len(m) < 2 {
		ts.Fatalf("envfrom: %q does not match %s", args[2], args[1])
	}
	ts.Setenv(args[0], string(m[1]))
}

// cmdHostileLog implements the script command
//
//	hostile-log NAME MODE
//
// which starts, for the rest of the script, a log server on loopback that
// a --log URL may name, and sets NAME to its URL. MODE is silent (it
// accepts connections and reads requests, never answers) or endless (it
// answers /log-key with a key and /checkpoint with a body that never
// ends).
func cmdHostileLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[1] != "silent" && args[1] != "endless") {
		ts.Fatalf("usage: hostile-log NAME silent|endless")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	mode := args[1]
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go hostileLogConn(c, mode)
		}
	}()
	ts.Defer(func() { ln.Close() })
	ts.Setenv(args[0], "http://"+ln.Addr().String())
}

// hostileLogKey is the verifier key hostile-log's endless log names (a
// valid note key: the verifier pins it, so that the log is read).
const hostileLogKey = "example.test/hostile+55f896b9+AbN4hAluQA5XSHKLm5PD16O3eH3W8swIZo7GxwN/139P"

// hostileLogConn serves one connection of hostile-log.
func hostileLogConn(c net.Conn, mode string) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		first, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for l := first; l != "\r\n"; {
			if l, err = br.ReadString('\n'); err != nil {
				return
			}
		}
		switch {
		case mode == "silent":
			io.Copy(io.Discard, br)
			return
		case strings.Contains(first, "/log-key "):
			key := hostileLogKey + "\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(key), key)
		default:
			io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
			chunk := []byte(strings.Repeat("x", 32<<10))
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}
	}
}
