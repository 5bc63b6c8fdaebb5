// Command echo is a small, fast MCP stdio server used by the proxy and serve
// tests, the proxy latency benchmark and the demo. It answers initialize,
// tools/list (two pages), tools/call and ping at once and never writes
// anything but JSON-RPC lines on stdout.
//
// Tools: echo {text} returns the text; add {a,b} returns the sum;
// delete_note {name} is annotated destructiveHint=true; fail always returns
// isError=true; hang (not listed) never answers.
//
// Flags select misbehaviour for tests: -notify sends
// notifications/tools/list_changed after notifications/initialized; -ask
// sends a server->client request (roots/list, id 0) after initialized;
// -banner writes a line on stderr at start; -ignore-term ignores SIGTERM and
// stdin EOF; -child starts a grandchild process (sleep) in the same process
// group; -exit N exits with status N when stdin closes.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

const page1 = `{"tools":[{"name":"echo","description":"Echoes the text back","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}},{"name":"add","description":"Adds two numbers","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},"annotations":{"readOnlyHint":true}}],"nextCursor":"page-2"}`
const page2 = `{"tools":[{"name":"delete_note","description":"Deletes a note","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}},"annotations":{"destructiveHint":true}},{"name":"fail","description":"Always fails","inputSchema":{"type":"object"}}]}`

func main() {
	notify := flag.Bool("notify", false, "send notifications/tools/list_changed after initialized")
	ask := flag.Bool("ask", false, "send a roots/list request (id 0) after initialized")
	banner := flag.Bool("banner", false, "write a banner on stderr at start")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM and stdin EOF")
	child := flag.Bool("child", false, "start a grandchild (sleep 300) in the process group")
	exitCode := flag.Int("exit", 0, "exit status when stdin closes")
	flag.Parse()
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *banner {
		fmt.Fprintln(os.Stderr, "echo server: ready")
	}
	if *child {
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "echo server: start child:", err)
		} else {
			fmt.Fprintf(os.Stderr, "echo server: child %d\n", c.Process.Pid)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) {
		out.WriteString(s)
		out.WriteByte('\n')
		out.Flush()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m msg
			if json.Unmarshal(line, &m) != nil {
				fmt.Fprintf(os.Stderr, "echo server: not json: %q\n", line)
				continue
			}
			if m.Method == "" {
				continue // a response to our request
			}
			id := string(m.ID)
			reply := func(result string) {
				send(`{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`)
			}
			switch m.Method {
			case "initialize":
				var p struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				_ = json.Unmarshal(m.Params, &p)
				v := p.ProtocolVersion
				if v == "" {
					v = "2025-11-25"
				}
				reply(`{"protocolVersion":` + strconv.Quote(v) + `,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"witness-echo","version":"1.0.0"}}`)
			case "notifications/initialized":
				if *notify {
					send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				}
				if *ask {
					send(`{"jsonrpc":"2.0","id":0,"method":"roots/list"}`)
				}
			case "ping":
				reply(`{}`)
			case "tools/list":
				var p struct {
					Cursor string `json:"cursor"`
				}
				_ = json.Unmarshal(m.Params, &p)
				if p.Cursor == "page-2" {
					reply(page2)
				} else {
					reply(page1)
				}
			case "tools/call":
				var p struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}
				_ = json.Unmarshal(m.Params, &p)
				var args map[string]any
				_ = json.Unmarshal(p.Arguments, &args)
				switch p.Name {
				case "echo":
					reply(`{"content":[{"type":"text","text":` + quote(fmt.Sprint(args["text"])) + `}]}`)
				case "add":
					a, _ := args["a"].(float64)
					b, _ := args["b"].(float64)
					reply(`{"content":[{"type":"text","text":"` + strconv.FormatFloat(a+b, 'g', -1, 64) + `"}],"structuredContent":{"sum":` + strconv.FormatFloat(a+b, 'g', -1, 64) + `}}`)
				case "delete_note":
					reply(`{"content":[{"type":"text","text":"deleted ` + jsonEsc(fmt.Sprint(args["name"])) + `"}]}`)
				case "hang":
					// never answers: the call stays open
				case "fail":
					reply(`{"content":[{"type":"text","text":"this tool always fails"}],"isError":true}`)
				default:
					send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"unknown tool ` + jsonEsc(p.Name) + `"}}`)
				}
			default:
				if len(m.ID) > 0 {
					send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"Method not found"}}`)
				}
			}
		}
		if err != nil {
			break
		}
	}
	if *ignoreTerm {
		time.Sleep(time.Hour)
	}
	os.Exit(*exitCode)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func jsonEsc(s string) string {
	q := quote(s)
	return q[1 : len(q)-1]
}
