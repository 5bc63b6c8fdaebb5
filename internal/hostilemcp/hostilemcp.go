// Package hostilemcp is the kit of the hostile MCP stdio servers under
// testdata/hostile: the one loop that reads a client's requests line by
// line, and the answers they share. Each server is then only what makes it
// hostile (a bad version, a wrong id, a reply cut in half, a child that
// outlives it...). It is for tests; nothing in the witness imports it.
package hostilemcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/mcp"
)

// Request is one request of the client: a line with an id.
type Request struct {
	ID     json.RawMessage
	Method string
}

// Serve reads lines from r until it ends or fails, and calls answer for
// every request (a JSON object with an id); other lines are skipped.
func Serve(r io.Reader, answer func(Request)) {
	br := bufio.NewReader(r)
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
		answer(Request{ID: m.ID, Method: m.Method})
	}
}

// Initialized is the answer to initialize, on one line: protocol version
// 2025-11-25, the capabilities given as JSON, the server's name.
func Initialized(id json.RawMessage, name, capabilities string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":%s,"serverInfo":{"name":%q,"version":"0"}}}`+"\n",
		id, capabilities, name)
}

// Result is an answer with the given result JSON, on one line.
func Result(id json.RawMessage, result string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
}

// NoTools answers initialize (with the tools capability) and every other
// request with an empty tool list: the plain server the process-tree
// hostiles wrap.
func NoTools(w io.Writer, name string) func(Request) {
	return func(q Request) {
		if q.Method == mcp.MethodInitialize {
			io.WriteString(w, Initialized(q.ID, name, `{"tools":{}}`))
			return
		}
		io.WriteString(w, Result(q.ID, `{"tools":[]}`))
	}
}
