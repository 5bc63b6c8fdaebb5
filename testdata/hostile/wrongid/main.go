// Command wrongid is a hostile MCP server: it answers initialize with the
// string id "1" when the request had the number 1 (and with 99 for later
// requests), so no reply ever matches.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agent-trace-witness/witness/internal/hostilemcp"
)

func main() {
	hostilemcp.Serve(os.Stdin, func(q hostilemcp.Request) {
		id := json.RawMessage(`99`)
		if string(q.ID) == "1" {
			id = json.RawMessage(`"1"`)
		}
		fmt.Print(hostilemcp.Initialized(id, "wrongid", `{}`))
	})
}
