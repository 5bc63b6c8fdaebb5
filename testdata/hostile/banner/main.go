// Command banner is a hostile MCP server: it prints a banner and a line of
// invalid UTF-8 on stdout before speaking MCP correctly.
package main

import (
	"fmt"
	"os"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	fmt.Print("Banner Server v1.0 starting on stdio...\n")
	os.Stdout.Write([]byte("\xff\xfe not utf-8\r\n"))
	hostilemcp.Serve(os.Stdin, func(q hostilemcp.Request) {
		switch q.Method {
		case "initialize":
			fmt.Print(hostilemcp.Initialized(q.ID, "banner", `{"tools":{}}`))
		case "tools/list":
			fmt.Print(hostilemcp.Result(q.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
		default:
			fmt.Print(hostilemcp.Result(q.ID, `{"content":[{"type":"text","text":"ok"}]}`))
		}
	})
}
