// Command flood is a hostile MCP server: it answers initialize, then sends
// notifications/message without pause and never answers anything else. It
// stops when stdin closes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
)

func main() {
	var stop atomic.Bool
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	ready := make(chan json.RawMessage, 1)
	go func() {
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				stop.Store(true)
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) == nil && m.Method == "initialize" {
				ready <- m.ID
			}
		}
	}()
	id := <-ready
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{}},"serverInfo":{"name":"flood","version":"0"}}}`+"\n", id)
	for i := 0; !stop.Load(); i++ {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood %d"}}`+"\n", i)
		if i%64 == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
	w.Flush()
}
