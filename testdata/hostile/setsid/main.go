// Command setsid is a hostile MCP server: it starts a child in a new session
// (setsid), so outside its process group, that sleeps forever and reports
// its pid on stderr ("setsid: child PID"); then it answers the handshake
// and exits when stdin closes, leaving the child behind.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		for {
			time.Sleep(time.Hour)
		}
	}
	child := exec.Command(os.Args[0], "child")
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "setsid: start child:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "setsid: child %d\n", child.Process.Pid)
	answer(os.Stdin)
}

// answer answers initialize and every other request with an empty tool
// list, until stdin closes.
func answer(in *os.File) {
	br := bufio.NewReader(in)
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
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"setsid","version":"0"}}}`+"\n", m.ID)
		} else {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`+"\n", m.ID)
		}
	}
}
