// Command midreply is a hostile MCP server: it answers initialize, then
// writes half of its tools/list reply, with no newline, and exits with
// status 3.
package main

import (
	"fmt"
	"os"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	hostilemcp.Serve(os.Stdin, func(q hostilemcp.Request) {
		if q.Method == "initialize" {
			fmt.Print(hostilemcp.Initialized(q.ID, "midreply", `{"tools":{}}`))
			return
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ha`, q.ID)
		os.Exit(3)
	})
}
