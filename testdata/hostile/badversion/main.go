// Command badversion is a hostile MCP server: it answers initialize with a
// protocol version the witness does not speak (1999-01-01).
package main

import (
	"fmt"
	"os"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	hostilemcp.Serve(os.Stdin, func(q hostilemcp.Request) {
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"badversion","version":"0"}}}`+"\n", q.ID)
	})
}
