// Command witness is the CLI of the witness toolchain. It is a thin shell:
// each verb lives in its own file, parses flags into an options struct and
// calls a plain function of a library package. Errors are printed as
// "witness: error: ..." and "witness: hint: ..." on stderr and mapped to the
// typed exit codes of internal/exitcode.
package main

import (
	"os"
)

func main() {
	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	a.ownProcess = true
	os.Exit(run(os.Args[1:], a))
}
