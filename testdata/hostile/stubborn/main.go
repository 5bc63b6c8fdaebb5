// Command stubborn is a hostile MCP server: it answers the handshake, then
// ignores stdin closing and SIGTERM; only SIGKILL ends it. It also starts a
// child in its process group that ignores SIGTERM too.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(os.Args) > 1 && os.Args[1] == "child" {
		for {
			time.Sleep(time.Hour)
		}
	}
	child := exec.Command(os.Args[0], "child")
	if err := child.Start(); err == nil {
		fmt.Fprintf(os.Stderr, "stubborn: child %d\n", child.Process.Pid)
	}
	hostilemcp.Serve(os.Stdin, hostilemcp.NoTools(os.Stdout, "stubborn"))
	fmt.Fprintln(os.Stderr, "stubborn: stdin closed, staying alive")
	for {
		time.Sleep(time.Hour)
	}
}
