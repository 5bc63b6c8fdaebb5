// Command requests is a hostile MCP server: before answering tools/list it
// sends requests of its own (ping with id 0, sampling/createMessage with a
// string id, roots/list) and waits for the client's replies; it then answers
// tools/list and tools/call, reporting on stderr what the client replied.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func main() {
	br := bufio.NewReader(os.Stdin)
	read := func() (*msg, bool) {
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return nil, false
			}
			var m msg
			if json.Unmarshal(line, &m) == nil {
				return &m, true
			}
		}
	}
	for {
		m, ok := read()
		if !ok {
			return
		}
		switch m.Method {
		case "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"requests","version":"0"}}}`+"\n", m.ID)
		case "tools/list":
			fmt.Print(`{"jsonrpc":"2.0","id":0,"method":"ping"}` + "\n")
			fmt.Print(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}` + "\n")
			fmt.Print(`{"jsonrpc":"2.0","id":2,"method":"roots/list"}` + "\n")
			for got := 0; got < 3; {
				r, ok := read()
				if !ok {
					return
				}
				if r.Method == "" {
					got++
					fmt.Fprintf(os.Stderr, "requests: reply to %s: result=%s error=%s\n", r.ID, r.Result, r.Error)
				}
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`+"\n", m.ID)
		case "":
		default:
			if m.ID != nil {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`+"\n", m.ID)
			}
		}
	}
}
