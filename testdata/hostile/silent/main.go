// Command silent is a hostile MCP server: it reads stdin and never answers,
// not even initialize. It exits when stdin closes.
package main

import (
	"io"
	"os"
)

func main() {
	os.Stderr.WriteString("silent: listening, never answering\n")
	io.Copy(io.Discard, os.Stdin)
}
