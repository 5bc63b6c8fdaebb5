// Command wrongid is a hostile MCP server: it answers initialize with the
// string id "1" when the request had the number 1 (and with 99 for later
// requests), so no reply ever matches.
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
		id := `99`
		if string(m.ID) == "1" {
			id = `"1"`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"wrongid","version":"0"}}}`+"\n", id)
	}
}
