// Command stubborn is a hostile MCP server: it answers the handshake, then
// ignores stdin closing and SIGTERM; only SIGKILL ends it. It also starts a
// child in its process group that ignores SIGTERM too.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(os.Args) > 1 && os.Args[1] == "child" {
		for {
			time.Sleep(time.Hour)
		}
	}
	child := exec.Command(os.Args[0], "child")
	if err := child.Start(); err == nil {
		fmt.Fprintf(os.Stderr, "stubborn: child %d\n", child.Process.Pid)
	}
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
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stubborn","version":"0"}}}`+"\n", m.ID)
		} else {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`+"\n", m.ID)
		}
	}
	fmt.Fprintln(os.Stderr, "stubborn: stdin closed, staying alive")
	for {
		time.Sleep(time.Hour)
	}
}
