// Command witness is the CLI of the witness toolchain. It is a thin shell:
// each verb lives in its own file, parses flags into an options struct and
// calls a plain function of a library package. Errors are printed as
// "witness: error: ..." and "witness: hint: ..." on stderr and mapped to the
// typed exit codes of internal/exitcode.
package main

import (
	"io"
	"os"

	"k8s.io/klog/v2"
)

func main() {
	silenceKlog()
	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	a.ownProcess = true
	os.Exit(run(os.Args[1:], a))
}

// silenceKlog drops klog's lines: Tessera (the transparency log engine of
// 'witness log' and --log) logs its internals through klog; what witness
// must say it returns as errors, so klog's lines would only be noise on
// stderr. The scripts' in-process witness (TestMain) calls it too.
func silenceKlog() {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
