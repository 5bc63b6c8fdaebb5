// Command setsid is a hostile MCP server: it starts a child in a new session
// (setsid), so outside its process group, that sleeps forever and reports
// its pid on stderr ("setsid: child PID"); then it answers the handshake
// and exits when stdin closes, leaving the child behind.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		for {
			time.Sleep(time.Hour)
		}
	}
	child := exec.Command(os.Args[0], "child")
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "setsid: start child:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "setsid: child %d\n", child.Process.Pid)
	hostilemcp.Serve(os.Stdin, hostilemcp.NoTools(os.Stdout, "setsid"))
}
