// Command ignoreeof is a hostile MCP server: it answers the handshake, and
// when stdin closes it keeps running (it says so on stderr) until a signal
// ends it; SIGTERM does, as by default.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		if m.Method == "initialize" {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"ignoreeof","version":"0"}}}`+"\n", m.ID)
		} else {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`+"\n", m.ID)
		}
	}
	fmt.Fprintln(os.Stderr, "ignoreeof: stdin closed, staying alive")
	for {
		time.Sleep(time.Hour)
	}
}
