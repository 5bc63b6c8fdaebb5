// Command ignoreeof is a hostile MCP server: it answers the handshake, and
// when stdin closes it keeps running (it says so on stderr) until a signal
// ends it; SIGTERM does, as by default.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	hostilemcp.Serve(os.Stdin, hostilemcp.NoTools(os.Stdout, "ignoreeof"))
	fmt.Fprintln(os.Stderr, "ignoreeof: stdin closed, staying alive")
	for {
		time.Sleep(time.Hour)
	}
}
