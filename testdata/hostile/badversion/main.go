// Command badversion is a hostile MCP server: it answers initialize with a
// protocol version the witness does not speak (1999-01-01).
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
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"badversion","version":"0"}}}`+"\n", m.ID)
	}
}
