// Command bigline is a hostile MCP server: it answers tools/list with a
// single 20 MiB line.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	hostilemcp.Serve(os.Stdin, func(q hostilemcp.Request) {
		if q.Method == "initialize" {
			fmt.Fprint(w, hostilemcp.Initialized(q.ID, "bigline", `{"tools":{}}`))
		} else {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","description":"%s","inputSchema":{"type":"object"}}]}}`+"\n", q.ID, strings.Repeat("x", 20<<20))
		}
		w.Flush()
	})
}
