// Command midreply is a hostile MCP server: it answers initialize, then
// writes half of its tools/list reply, with no newline, and exits with
// status 3.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		if m.Method == "initialize" {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"midreply","version":"0"}}}`+"\n", m.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ha`, m.ID)
		os.Exit(3)
	}
}
