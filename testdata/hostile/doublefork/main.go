// Command doublefork is a hostile MCP server: it starts a child that starts
// a grandchild in a new session (setsid) and exits at once, the classic
// daemon double fork, so that the grandchild is an orphan outside the
// server's process group. The grandchild keeps the server's stderr open,
// reports its pid there ("doublefork: grandchild PID") and sleeps forever.
// The server answers the handshake and exits when stdin closes.
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
	switch {
	case len(os.Args) > 1 && os.Args[1] == "grandchild":
		fmt.Fprintf(os.Stderr, "doublefork: grandchild %d\n", os.Getpid())
		for {
			time.Sleep(time.Hour)
		}
	case len(os.Args) > 1 && os.Args[1] == "child":
		gc := exec.Command(os.Args[0], "grandchild")
		gc.Stderr = os.Stderr
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "doublefork: start grandchild:", err)
			os.Exit(1)
		}
		os.Exit(0) // the grandchild is orphaned
	}
	child := exec.Command(os.Args[0], "child")
	child.Stderr = os.Stderr
	if err := child.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "doublefork: child:", err)
		os.Exit(1)
	}
	hostilemcp.Serve(os.Stdin, hostilemcp.NoTools(os.Stdout, "doublefork"))
}
